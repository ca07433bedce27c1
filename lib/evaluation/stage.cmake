# lib/evaluation: Dice/IoU/HD95, summary.json.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(evaluation
  DEPENDS core
  PRIVATE_DEPENDS io
  PRIVATE_LIBS ITK  # distance maps for HD95 (distance_map_itk.cpp)
  PUBLIC_HEADERS evaluate_folder.h metrics.h)
