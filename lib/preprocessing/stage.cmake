# lib/preprocessing: transpose, crop, normalise, resample; the case store; .npy/.npz arrays.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(preprocessing
  DEPENDS core io fingerprint plans)
