# One library target per stage of lib/ (docs/architecture.md), declared in lib/<stage>/stage.cmake the way
# ITK's modules declare theirs in itk-module.cmake:
#
#   medseg_stage(<name> [TORCH] [DEPENDS <stage>...] [PRIVATE_DEPENDS <stage>...] [LIBS <target>...] [PRIVATE_LIBS <target>...]
#                [PUBLIC_HEADERS <header>...])
#
# makes the static library medseg_stage_<name> (alias medseg::<name>, file libmedseg_<name>.a) from lib/<name>/**.cpp.
# DEPENDS are the stages its headers include (public), PRIVATE_DEPENDS those only its .cpp files include;
# TORCH links LibTorch (through core_torch, lib/core_torch, which its files may then include). LIBS/PRIVATE_LIBS are third-party
# targets; the word ITK stands for ${ITK_LIBRARIES}, libtiff and DCMTK, and drops out when MEDSEG_WITH_ITK=OFF.
# PUBLIC_HEADERS are the headers of lib/<name> (paths below it) that `cmake --install` ships, the stage's
# interface to a program that links the installed package; the others are its own (docs/api.md, "Installed headers").
# A public header includes only public headers (tests/base/layering_test.cpp).
#
# Why an undeclared include fails the build: a stage's sources do not see lib/. They see one folder per
# stage, stage_include/<stage>/, holding a link named <stage> to lib/<stage> and nothing else, added to the
# include path of the stage and (as a usage requirement) of every stage that depends on it. An include of a
# stage outside the declared dependencies (direct or through public ones) finds no such folder.
# tests/base/layering_test.cpp reads these declarations and checks that every include is a direct edge.
set(MEDSEG_STAGE_INCLUDE_ROOT "${CMAKE_BINARY_DIR}/stage_include")

function(medseg_stage_include_dir folder out)
  set(dir "${MEDSEG_STAGE_INCLUDE_ROOT}/${folder}")
  if(NOT EXISTS "${dir}/${folder}")
    file(MAKE_DIRECTORY "${dir}")
    file(CREATE_LINK "${MEDSEG_LIB_DIR}/${folder}" "${dir}/${folder}" SYMBOLIC)
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

# The .cpp files of lib/<folder>, less the ITK and cairo files this build leaves out (lib/CMakeLists.txt).
function(medseg_stage_sources folder out)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${MEDSEG_LIB_DIR}/${folder}/*.cpp")
  if(NOT MEDSEG_WITH_ITK)
    list(FILTER files EXCLUDE REGEX "_(itk|dcmtk)\\.cpp$")
  endif()
  if(MEDSEG_WITH_CAIRO)
    list(FILTER files EXCLUDE REGEX "_cairo_off\\.cpp$")
  else()
    list(FILTER files EXCLUDE REGEX "_cairo\\.cpp$")
  endif()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

function(medseg_stage_libs out)
  set(libs)
  foreach(lib ${ARGN})
    if(lib STREQUAL "ITK")
      # With libtiff, for the TIFF stacks ITK cannot read (io/tiff_planes_itk.cpp), and DCMTK, which reads
      # DICOM and writes DICOM SEG (io/dicom_series_dcmtk.cpp, io/dicom_seg_dcmtk.cpp; Debian's ITK depends on it).
      if(MEDSEG_WITH_ITK)
        list(APPEND libs ${ITK_LIBRARIES} TIFF::TIFF DCMTK::dcmdata DCMTK::dcmjpeg DCMTK::dcmjpls DCMTK::dcmseg)
      endif()
    else()
      list(APPEND libs ${lib})
    endif()
  endforeach()
  set(${out} ${libs} PARENT_SCOPE)
endfunction()

function(medseg_stage name)
  cmake_parse_arguments(S "TORCH" "" "DEPENDS;PRIVATE_DEPENDS;LIBS;PRIVATE_LIBS;PUBLIC_HEADERS" ${ARGN})
  medseg_stage_sources(${name} sources)
  set(target medseg_stage_${name})
  add_library(${target} STATIC ${sources})
  add_library(medseg::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES CXX_STANDARD 17 POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${name}
                                             OUTPUT_NAME medseg_${name})
  medseg_stage_include_dir(${name} include_dir)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${include_dir}>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/medseg>)
  target_compile_definitions(${target} PUBLIC ${MEDSEG_COMMON_DEFS})
  foreach(dep ${S_DEPENDS})
    target_link_libraries(${target} PUBLIC medseg_stage_${dep})
  endforeach()
  foreach(dep ${S_PRIVATE_DEPENDS})
    target_link_libraries(${target} PRIVATE medseg_stage_${dep})
  endforeach()
  medseg_stage_libs(public_libs ${S_LIBS})
  medseg_stage_libs(private_libs ${S_PRIVATE_LIBS})
  target_link_libraries(${target} PUBLIC ${public_libs} PRIVATE ${private_libs})
  if(S_TORCH)
    target_link_libraries(${target} PUBLIC medseg_stage_core_torch)
    if(MEDSEG_USE_PCH)
      # One precompiled torch header for every torch stage: same flags (static, PIC, -O3) as core_torch's.
      target_precompile_headers(${target} REUSE_FROM medseg_stage_core_torch)
    endif()
    # Batches of sources per translation unit: each torch file spends ~5 s loading the 690 MB precompiled
    # header before its own code (CMakeLists.txt, MEDSEG_UNITY_BUILD). Their file-local names must differ.
    set_target_properties(${target} PROPERTIES UNITY_BUILD ${MEDSEG_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 8)
    # A file that asks core/torch_compat.h for an optional part (#define MEDSEG_TORCH_COMPAT_... before its
    # includes) compiles alone: in a batch, an earlier file would have included the header without it.
    foreach(src ${sources})
      file(STRINGS "${src}" opts_in REGEX "^#define MEDSEG_TORCH_COMPAT_")
      if(opts_in)
        set_source_files_properties(${src} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
      endif()
    endforeach()
    if(MEDSEG_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-subobject-linkage)  # as in a header (tests/CMakeLists.txt)
    endif()
  endif()
  foreach(h ${S_PUBLIC_HEADERS})
    if(NOT EXISTS "${MEDSEG_LIB_DIR}/${name}/${h}")
      message(FATAL_ERROR "lib/${name}/stage.cmake: public header '${h}' does not exist")
    endif()
    set_property(GLOBAL APPEND PROPERTY MEDSEG_PUBLIC_HEADERS "${name}/${h}")
  endforeach()
  set_property(GLOBAL APPEND PROPERTY MEDSEG_STAGES ${name})
  set_property(GLOBAL PROPERTY MEDSEG_STAGE_DEPS_${name} ${S_DEPENDS} ${S_PRIVATE_DEPENDS})
  if(S_TORCH OR name STREQUAL "core_torch")
    set_property(GLOBAL APPEND PROPERTY MEDSEG_TORCH_STAGES ${name})
  endif()
endfunction()

# After every declaration: the stages that link no torch, directly or through a dependency (api, whose headers
# include none, stands on inference and is not one of them), as the global property MEDSEG_TORCH_FREE_STAGES.
function(medseg_find_torch_free_stages)
  get_property(stages GLOBAL PROPERTY MEDSEG_STAGES)
  get_property(torch GLOBAL PROPERTY MEDSEG_TORCH_STAGES)
  set(changed ON)
  while(changed)  # a stage on a torch stage links torch too; repeat until nothing is added
    set(changed OFF)
    foreach(s ${stages})
      get_property(deps GLOBAL PROPERTY MEDSEG_STAGE_DEPS_${s})
      foreach(d ${deps})
        if(d IN_LIST torch AND NOT s IN_LIST torch)
          list(APPEND torch ${s})
          set(changed ON)
        endif()
      endforeach()
    endforeach()
  endwhile()
  set(free ${stages})
  list(REMOVE_ITEM free ${torch})
  set_property(GLOBAL PROPERTY MEDSEG_TORCH_FREE_STAGES ${free})
endfunction()
