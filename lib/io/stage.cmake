# lib/io: image files, NIfTI checks, dataset.json.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(io
  DEPENDS core
  PRIVATE_LIBS ITK ZLIB::ZLIB
  PUBLIC_HEADERS case_loader.h dataset.h dataset_conversion.h dicom_seg.h dicom_series.h dicom_zip.h
                image_folder.h image_formats.h image_io.h itk_globals.h label_check.h nifti_check.h
                output_classes.h reorient.h synthetic_dataset.h)
