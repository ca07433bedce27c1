# lib/data: patch sampling, augmentation, batches, the threaded loader.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(data
  TORCH
  DEPENDS core preprocessing
  PRIVATE_DEPENDS plans postprocessing)
