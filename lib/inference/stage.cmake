# lib/inference: model folders, sliding window, prediction, export.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(inference
  TORCH
  DEPENDS core io plans preprocessing postprocessing checkpoint distributed
  PRIVATE_DEPENDS planning fingerprint models visualization
  PUBLIC_HEADERS case_inputs.h dicom_output.h export.h model_folder.h overlays.h placement.h predict_cases.h
                predict_folder.h predictor.h slab_export.h sliding_window.h zipped_cases.h)
