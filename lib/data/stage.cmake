# lib/data: patch sampling, augmentation, batches, the threaded loader.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(data
  TORCH
  DEPENDS core preprocessing
  PRIVATE_DEPENDS plans postprocessing
  PUBLIC_HEADERS augment/axis_ops.h augment/blank_rectangle.h augment/config.h augment/deep_supervision.h
                augment/device_augment.h augment/draw.h augment/gaussian_blur.h augment/intensity.h
                augment/local_gaussian.h augment/low_resolution.h augment/median_filter.h augment/morphology.h
                augment/resample.h augment/sample.h augment/spatial.h batch.h case_digest.h case_source.h
                data_loader.h patch_sampler.h preprocessed_source.h previous_stage_source.h region_targets.h
                rng.h)
