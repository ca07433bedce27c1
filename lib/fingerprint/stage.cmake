# lib/fingerprint: cropping, intensity statistics, dataset_fingerprint.json.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(fingerprint
  DEPENDS core io
  PUBLIC_HEADERS crop.h extractor.h fingerprint.h intensity_stats.h)
