# lib/planning: plans.json, planners, topology, the byte memory model.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(planning
  DEPENDS core)
