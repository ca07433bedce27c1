# lib/planning: the planners (nnU-Net's experiment planners, by name), topology, the byte memory model and
# its check, spatial parallelism, writing and moving plans files. plans.json's types are in lib/plans.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(planning
  DEPENDS core plans)
