# lib/io: image files, NIfTI checks, dataset.json.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(io
  DEPENDS core
  PRIVATE_LIBS ITK ZLIB::ZLIB)
