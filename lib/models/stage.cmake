# lib/models: the networks and their layers.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(models
  TORCH
  DEPENDS core plans distributed
  PUBLIC_HEADERS channels_last_norm.h eva_blocks.h layers.h monai_blocks.h network.h onednn_conv.h plans_architecture.h swin_blocks.h
                swin_unetr.h unet.h unet_blocks.h)
