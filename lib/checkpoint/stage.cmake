# lib/checkpoint: checkpoint files: the container, weights, optimizer and RNG state.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(checkpoint
  TORCH
  DEPENDS core
  PRIVATE_LIBS ZLIB::ZLIB
  PUBLIC_HEADERS average.h checkpoint.h container.h optimizer_state.h rng_state.h)
