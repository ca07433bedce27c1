# lib/sharing: model zips and nnU-Net model folders.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(sharing
  TORCH
  DEPENDS core
  PRIVATE_DEPENDS checkpoint inference models plans io training
  PRIVATE_LIBS PkgConfig::LIBZIP
  PUBLIC_HEADERS manifest.h model_export.h model_install.h nnssl_checkpoint.h nnunet_export.h nnunet_import.h)
