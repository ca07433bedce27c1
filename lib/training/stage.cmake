# lib/training: the trainer and its parts.
# Its dependencies are checked by the build and by tests/base/layering_test.cpp (cmake/MedsegStage.cmake).
medseg_stage(training
  TORCH
  DEPENDS core plans planning data models
  PRIVATE_DEPENDS io preprocessing evaluation checkpoint inference distributed
  PRIVATE_LIBS medseg_cairo
  PUBLIC_HEADERS loss.h metrics_log.h optimizer.h optimizer_type.h pretrained_encoder.h rank_fit.h run_folder.h
                schedule.h splits.h trainer.h trainer_config.h)
