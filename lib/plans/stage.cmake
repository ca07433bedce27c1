# lib/plans: plans.json's types and their one reader (inherits_from, arch_kwargs, value limits), the
# normalization-scheme names and Primus's decoder shapes that follow from the plans alone. The stages that
# read plans (preprocessing, data, models, sharing) stand on this, not on the planners (as nnU-Net keeps
# utilities/plans_handling apart from experiment_planning).
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(plans
  DEPENDS core
  PUBLIC_HEADERS nnssl_adaptation_plan.h normalization_names.h plan_limits.h plans.h primus_decoder.h)
