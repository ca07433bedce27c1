# lib/postprocessing: connected components, keep-the-largest-component rules, postprocessing.json.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(postprocessing
  DEPENDS core io evaluation
  PUBLIC_HEADERS components.h crossval.h determine.h postprocessing.h)
