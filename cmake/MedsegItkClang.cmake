# Debian's ITK 5.2 headers were generated for gcc only: itk_compiler_detection.h stops with
# "Unsupported compiler" under clang. For clang builds (sanitizers, libFuzzer: docs/hardening.md)
# a copy that takes clang as supporting every C++ feature ITK asks about (clang 14 does) is
# force-included first; its include guard then keeps the original out.
find_file(MEDSEG_ITK_DETECTION itk_compiler_detection.h PATHS ${ITK_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(NOT MEDSEG_ITK_DETECTION)
  return()
endif()
file(READ ${MEDSEG_ITK_DETECTION} text)
if(NOT text MATCHES "#    include \"compilers/ITK_COMPILER_INFO_GNU_CXX.h\"")
  return()  # another ITK build, not the gcc-only one
endif()
get_filename_component(itk_dir ${MEDSEG_ITK_DETECTION} DIRECTORY)
file(STRINGS ${itk_dir}/compilers/ITK_COMPILER_INFO_GNU_CXX.h lines REGEX "define ITK_COMPILER_CXX_[A-Z_0-9]+ 1")
set(defs "")
foreach(line ${lines})
  string(REGEX MATCH "ITK_COMPILER_CXX_[A-Z_0-9]+" feature "${line}")
  string(APPEND defs "#    define ${feature} 1\n")
endforeach()
string(REPLACE "#    include \"compilers/ITK_COMPILER_INFO_GNU_CXX.h\"\n" "${defs}" text "${text}")
string(REPLACE "#  if ITK_COMPILER_IS_GNU\n" "#  if ITK_COMPILER_IS_GNU || ITK_COMPILER_IS_Clang\n" text "${text}")
set(shim ${CMAKE_BINARY_DIR}/itk_clang/itk_compiler_detection.h)
file(WRITE ${shim}.tmp "${text}")
configure_file(${shim}.tmp ${shim} COPYONLY)  # unchanged content keeps its timestamp
add_compile_options("SHELL:-include ${shim}")
message(STATUS "medseg: clang build, ITK compiler detection shim ${shim}")
