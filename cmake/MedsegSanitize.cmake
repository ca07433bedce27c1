# Sanitizer and fuzzing builds (docs/hardening.md).
#   -DMEDSEG_SANITIZE=address,undefined   ASan + UBSan (gcc or clang)
#   -DMEDSEG_SANITIZE=thread              TSan (not combinable with address)
#   -DMEDSEG_FUZZ=ON                      libFuzzer targets in tests/fuzz (clang only; defaults the
#                                         sanitizers to address,undefined)
# The flags go on every target of this project (compile and link). Torch, ITK and the other
# Debian libraries are not instrumented: their bugs are out of reach, and tsan needs the
# suppressions in tests/sanitizers/ for the unannotated thread pools inside them.
set(MEDSEG_SANITIZE "" CACHE STRING "Sanitizers for every medseg target, as for -fsanitize= (e.g. address,undefined or thread)")
option(MEDSEG_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)

if(MEDSEG_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MEDSEG_FUZZ=ON needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  if(NOT MEDSEG_SANITIZE)
    set(MEDSEG_SANITIZE "address,undefined" CACHE STRING "" FORCE)
  endif()
  # Coverage feedback for the library code; only the fuzz executables link libFuzzer's main().
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(MEDSEG_SANITIZE)
  if(MEDSEG_SANITIZE MATCHES "thread" AND MEDSEG_SANITIZE MATCHES "address")
    message(FATAL_ERROR "MEDSEG_SANITIZE: thread and address cannot be combined")
  endif()
  add_compile_options(-fsanitize=${MEDSEG_SANITIZE} -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${MEDSEG_SANITIZE})
  if(MEDSEG_SANITIZE MATCHES "undefined")
    # A UBSan report must fail the test (by default UBSan prints and carries on).
    add_compile_options(-fno-sanitize-recover=undefined)
    add_link_options(-fno-sanitize-recover=undefined)
    # ...which is also why ITK's own header templates are left uninstrumented at compile time rather
    # than suppressed at run time (tests/sanitizers/ubsan_ignorelist.txt says what ITK 5.2 does).
    if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      add_compile_options(-fsanitize-ignorelist=${CMAKE_SOURCE_DIR}/tests/sanitizers/ubsan_ignorelist.txt)
    endif()
  endif()
  message(STATUS "medseg: sanitizers ${MEDSEG_SANITIZE}")
endif()
