# Third-party packages, all from Debian (scripts/install_deps.sh) or, for torch, a PyTorch wheel's
# bundled LibTorch passed as -DTorch_DIR=...
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.2 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(PNG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
# cairo draws progress.png and the overlay pictures. A build without it (e.g. on a GPU node that lacks
# the library) trains and predicts all the same, without those pictures (docs/gpu-validation.md).
option(MEDSEG_WITH_CAIRO "Draw progress.png and overlay pictures with cairo" ON)
add_library(medseg_cairo INTERFACE)
if(MEDSEG_WITH_CAIRO)
  pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET cairo)
  target_link_libraries(medseg_cairo INTERFACE PkgConfig::CAIRO)
endif()
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)  # model zips (lib/sharing)
# medseg_serve's HTTP (lib/serve): Debian's cpp-httplib, a compiled library whose flags come from pkg-config.
# Optional: a machine without it (the GPU bundle's node) builds everything but the server.
pkg_check_modules(HTTPLIB IMPORTED_TARGET cpp-httplib)
set(MEDSEG_WITH_SERVE ${HTTPLIB_FOUND})

# LibTorch: -DTorch_DIR selects any; by default the torch 2.11 wheel's (CUDA 13.0), unpacked by
# scripts/install_libtorch.sh, when it is there; Debian's libtorch-dev otherwise (MEDSEG_TORCH=debian
# in scripts/build.sh asks for it explicitly).
set(MEDSEG_LIBTORCH_CACHE "$ENV{MEDSEG_CACHE}")
if(NOT MEDSEG_LIBTORCH_CACHE)
  set(MEDSEG_LIBTORCH_CACHE "$ENV{HOME}/.cache/medseg")
endif()
set(medseg_wheel_torch_dir "${MEDSEG_LIBTORCH_CACHE}/libtorch-2.11.0-cu130/torch/share/cmake/Torch")
if(NOT Torch_DIR AND EXISTS "${MEDSEG_LIBTORCH_CACHE}/libtorch-2.11.0-cu130/READY")
  set(Torch_DIR "${medseg_wheel_torch_dir}" CACHE PATH "LibTorch's CMake package" FORCE)
endif()
# A wheel's TorchConfig finds its libraries and Caffe2 package through PATHS, which CMake searches after
# the system's: with Debian's libtorch-dev also installed, it would mix the two. Search the wheel first.
if(Torch_DIR AND EXISTS "${Torch_DIR}/../Caffe2/Caffe2Config.cmake")
  get_filename_component(medseg_torch_prefix "${Torch_DIR}/../../.." ABSOLUTE)
  if(EXISTS "${medseg_torch_prefix}/lib/libtorch.so")
    list(PREPEND CMAKE_PREFIX_PATH "${medseg_torch_prefix}")
    get_filename_component(medseg_caffe2_dir "${Torch_DIR}/../Caffe2" ABSOLUTE)
    set(Caffe2_DIR "${medseg_caffe2_dir}" CACHE PATH "Caffe2 package of the LibTorch in use" FORCE)
  endif()
endif()
find_package(Torch REQUIRED)
if(medseg_torch_prefix AND NOT TORCH_LIBRARY MATCHES "^${medseg_torch_prefix}/")
  message(FATAL_ERROR "medseg: Torch_DIR is ${Torch_DIR} but libtorch resolved to ${TORCH_LIBRARY}; "
                      "remove the build folder and configure again")
endif()
# PyTorch's wheel ships its own fmt (12.x) in its include folder, which comes before /usr/include and
# would hide the fmt that Debian's spdlog was built with (9.x). A folder holding only the system's fmt,
# searched before torch's, keeps spdlog on its own fmt (torch's headers that medseg includes do not use
# fmt). It is made for every LibTorch, so that all builds compile with the same include order.
if(TARGET fmt::fmt)
  get_target_property(medseg_fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
endif()
if(NOT medseg_fmt_include)
  set(medseg_fmt_include /usr/include)
endif()
list(GET medseg_fmt_include 0 medseg_fmt_include)
set(medseg_fmt_shim "${CMAKE_BINARY_DIR}/fmt-shim")
file(MAKE_DIRECTORY "${medseg_fmt_shim}")
file(CREATE_LINK "${medseg_fmt_include}/fmt" "${medseg_fmt_shim}/fmt" SYMBOLIC)
include_directories(BEFORE SYSTEM "${medseg_fmt_shim}")
foreach(dir ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${dir}/fmt/format.h" AND NOT dir STREQUAL medseg_fmt_include)
    message(STATUS "medseg: this LibTorch bundles fmt; spdlog keeps the system's (${medseg_fmt_include}/fmt)")
  endif()
endforeach()
# PyTorch's wheel is built with a newer g++ than Debian's and exports the newer libstdc++ parts it linked
# statically (std::filesystem among them) from libtorch*.so. An executable whose first NEEDED library
# is libtorch binds std::filesystem::remove_all to torch's copy, which crashed at exit (a temporary
# folder's destructor called a null pointer). libstdc++.so first in every link keeps the C++ runtime
# the system's; only what it lacks is taken from torch. That flag alone was not enough with Ubuntu
# 24.04's g++ 13 and ld 2.42 (the GPU node): its executables had no NEEDED libstdc++ at all, bound
# remove_all to libtorch.so and crashed in a test's temporary folder. So every target that links torch
# links it through medseg_torch, which names libstdc++ right before torch: the objects' std:: symbols
# are still undefined there, so even an --as-needed link records libstdc++ ahead of libtorch.
# tests/nn/link_order_test.cpp checks where the dynamic linker binds std::filesystem::remove_all.
add_link_options("LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
add_library(medseg_torch INTERFACE)
target_link_libraries(medseg_torch INTERFACE stdc++ ${TORCH_LIBRARIES})
# The same rule for programs that link the installed package (the flag travels with the exported target).
target_link_options(medseg_torch INTERFACE "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
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
# c10d's headers (ProcessGroupGloo.hpp, ProcessGroupNCCL.hpp) include gloo's and NCCL's, which a PyTorch
# wheel does not ship: gloo's come from the system (Debian: libgloo-dev; the GPU bundle carries them),
# NCCL's and the other CUDA libraries' from the CUDA toolkit or else the nvidia-* wheels installed
# beside torch (a pip-installed PyTorch). They are added to torch's own include folders, after the
# toolkit's, so that every target that links torch compiles c10d.
find_path(MEDSEG_GLOO_INCLUDE_DIR gloo/algorithm.h HINTS ${TORCH_INCLUDE_DIRS})
if(NOT MEDSEG_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "medseg: gloo's headers (gloo/algorithm.h), which LibTorch's c10d headers include, "
                      "were not found: install libgloo-dev (Debian) or pass -DMEDSEG_GLOO_INCLUDE_DIR=")
endif()
set(medseg_torch_extra_includes "${MEDSEG_GLOO_INCLUDE_DIR}")
if(MEDSEG_TORCH_CUDA)
  set(medseg_nvidia_includes)
  if(medseg_torch_prefix)
    file(GLOB medseg_nvidia_includes LIST_DIRECTORIES true "${medseg_torch_prefix}/../nvidia/*/include")
  endif()
  foreach(header nccl.h cudnn.h cublas_v2.h cusparse.h cusolverDn.h)
    string(MAKE_C_IDENTIFIER "MEDSEG_CUDA_${header}_DIR" var)
    find_path(${var} ${header} PATHS ${CUDAToolkit_INCLUDE_DIRS} ${medseg_nvidia_includes} NO_DEFAULT_PATH)
    find_path(${var} ${header})
    if(${var})
      get_filename_component(dir "${${var}}" ABSOLUTE)
      list(APPEND medseg_torch_extra_includes "${dir}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES medseg_torch_extra_includes)
endif()
if(TARGET torch)
  set_property(TARGET torch APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES ${medseg_torch_extra_includes})
endif()
list(APPEND TORCH_INCLUDE_DIRS ${medseg_torch_extra_includes})

if(MEDSEG_WITH_ITK)
  set(MEDSEG_ITK_COMPONENTS
    ITKCommon ITKIOImageBase ITKIONIFTI ITKIONRRD ITKIOMeta
    ITKIOPNG ITKIOBMP ITKIOTIFF ITKIOGIPL  # nnU-Net's NaturalImage2DIO, Tiff3DIO and .gipl (docs/file_formats.md)
    ITKImageFunction ITKImageGrid ITKSmoothing ITKDistanceMap ITKLabelMap)
  find_package(ITK REQUIRED COMPONENTS ${MEDSEG_ITK_COMPONENTS})
  include(${ITK_USE_FILE})
  # ITK's TIFF reader cannot read samples kept in separate planes, which is how tifffile stores a stack of
  # 3 or 4 slices (lib/io/tiff_planes_itk.cpp reads those with libtiff itself).
  find_package(TIFF REQUIRED)
  # DICOM series (lib/io/dicom_series_dcmtk.cpp, docs/dicom.md); Debian's ITK package depends on DCMTK.
  find_package(DCMTK CONFIG REQUIRED)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    include(MedsegItkClang)
  endif()
  message(STATUS "medseg: ITK ${ITK_VERSION}")
else()
  message(STATUS "medseg: ITK disabled; image IO and NIfTI CLIs are not built")
endif()
