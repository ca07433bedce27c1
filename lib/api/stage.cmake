# lib/api: the embedding API (docs/api.md); its headers include no torch header.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(api
  DEPENDS core
  PRIVATE_DEPENDS io postprocessing inference training sharing
  PUBLIC_HEADERS segmenter.h train.h)
