# Compiler warnings for every medseg target (lib, apps, tests); dependencies are system headers and
# stay quiet. CI builds with -DMEDSEG_WERROR=ON (scripts/test.sh), so a new warning fails it.
option(MEDSEG_WARNINGS "Compile medseg with -Wall -Wextra -Wshadow" ON)
option(MEDSEG_WERROR "Treat warnings as errors" OFF)
if(MEDSEG_WARNINGS)
  add_compile_options(-Wall -Wextra -Wshadow)
  if(MEDSEG_USE_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # gcc skips a precompiled header whose flags differ, silently, and the file then takes ~35 s
    # instead of a few: say so (and fail CI) instead.
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Winvalid-pch>)
  endif()
  if(MEDSEG_WERROR)
    # gcc 12's -Wnonnull fires once in a while inside libstdc++'s stl_algobase.h at -O3 (seen once,
    # not reproducible on the same file): it stays a warning, not a CI failure.
    add_compile_options(-Werror -Wno-error=nonnull)
  endif()
endif()

