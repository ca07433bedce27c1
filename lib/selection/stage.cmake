# lib/selection: ensembling, find_best_configuration.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(selection
  DEPENDS core
  PRIVATE_DEPENDS io preprocessing evaluation postprocessing
  PUBLIC_HEADERS ensemble.h find_best.h)
