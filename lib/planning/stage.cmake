# lib/planning: the planners (nnU-Net's experiment planners, by name), topology, the byte memory model and
# its check, spatial parallelism, writing and moving plans files. plans.json's types are in lib/plans.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(planning
  DEPENDS core plans
  PUBLIC_HEADERS memory_check.h memory_model.h move_plans.h network_flops.h planner.h planner_inputs.h
                planner_specs.h plans_file.h spatial_parallel.h topology.h)
