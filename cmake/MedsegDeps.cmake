# Third-party packages, all from Debian (scripts/install_deps.sh) or, for torch, a PyTorch wheel's
# bundled LibTorch passed as -DTorch_DIR=...
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.2 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(PNG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET cairo)  # progress.png plots
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)  # model zips (lib/sharing)

find_package(Torch REQUIRED)
# Debian's TorchConfig forces CXX_STANDARD 14 on the imported target; we build C++17 regardless.
set(MEDSEG_TORCH_VERSION "${Torch_VERSION}")
if(NOT MEDSEG_TORCH_VERSION)
  set(MEDSEG_TORCH_VERSION "unknown")
endif()
set(MEDSEG_TORCH_CUDA OFF)
if(TARGET torch_cuda OR CUDA_FOUND OR TORCH_CUDA_LIBRARIES)
  set(MEDSEG_TORCH_CUDA ON)
endif()
message(STATUS "medseg: LibTorch ${MEDSEG_TORCH_VERSION} at ${Torch_DIR}, CUDA=${MEDSEG_TORCH_CUDA}")

if(MEDSEG_WITH_ITK)
  find_package(ITK REQUIRED COMPONENTS
    ITKCommon ITKIOImageBase ITKIONIFTI ITKIONRRD ITKIOMeta
    ITKImageFunction ITKImageGrid ITKSmoothing ITKDistanceMap ITKLabelMap)
  include(${ITK_USE_FILE})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    include(MedsegItkClang)
  endif()
  message(STATUS "medseg: ITK ${ITK_VERSION}")
else()
  message(STATUS "medseg: ITK disabled; image IO and NIfTI CLIs are not built")
endif()
