# lib/visualization: overlay pictures (cairo, libpng).
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(visualization
  DEPENDS core io
  PRIVATE_DEPENDS postprocessing
  PRIVATE_LIBS medseg_cairo PNG::PNG
  PUBLIC_HEADERS overlay.h slice_overlay.h)
