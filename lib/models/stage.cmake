# lib/models: the networks and their layers.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(models
  TORCH
  DEPENDS core plans distributed)
