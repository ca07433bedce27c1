# lib/distributed: ranks, rendezvous, collectives, the gradient engine, the launcher.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(distributed
  TORCH
  DEPENDS core
  PUBLIC_HEADERS gradient_sync.h halo.h join.h launch.h process_group.h same_everywhere.h world.h)
