# lib/preprocessing: transpose, crop, normalise, resample; the case store; .npy/.npz arrays.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(preprocessing
  DEPENDS core io fingerprint plans
  PRIVATE_LIBS ITK  # skimage.transform.resize's kernels on ITK's interpolators (skimage_resize_itk.cpp)
  PUBLIC_HEADERS case_store.h class_locations.h dataset_preprocessing.h normalization.h npy.h npz.h one_hot.h
                preprocessor.h resampling.h transpose.h)
