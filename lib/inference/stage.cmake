# lib/inference: model folders, sliding window, prediction, export.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(inference
  TORCH
  DEPENDS core io plans preprocessing postprocessing checkpoint distributed
  PRIVATE_DEPENDS planning fingerprint models visualization)
