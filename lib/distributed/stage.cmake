# lib/distributed: ranks, rendezvous, collectives, the gradient engine, the launcher.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(distributed
  TORCH
  DEPENDS core)
