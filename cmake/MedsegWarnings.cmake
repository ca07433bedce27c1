# Compiler warnings for every medseg target (lib, apps, tests); dependencies are system headers and
# stay quiet. CI builds with -DMEDSEG_WERROR=ON (scripts/test.sh), so a new warning fails it.
option(MEDSEG_WARNINGS "Compile medseg with -Wall -Wextra -Wshadow" ON)
option(MEDSEG_WERROR "Treat warnings as errors" OFF)
if(MEDSEG_WARNINGS)
  add_compile_options(-Wall -Wextra -Wshadow)
  if(MEDSEG_WERROR)
    add_compile_options(-Werror)
  endif()
endif()

