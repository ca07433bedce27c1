#include "api/train.h"

#include "training/trainer.h"
#include "training/trainer_config.h"

namespace medseg::api {

TrainResult train_fold(const std::string& dataset, const std::string& configuration, const std::string& fold,
                       const TrainFoldOptions& o) {
  training::TrainerConfig cfg = training::find_trainer_config(o.trainer);
  // The CLI's ranges, named as the options are.
  const auto set = [](const char* key, const std::optional<int64_t>& v, int64_t& into, const char* name) {
    if (!v) return;
    training::check_trainer_setting(key, static_cast<double>(*v), name);
    into = *v;
  };
  set("num_epochs", o.epochs, cfg.num_epochs, "TrainFoldOptions::epochs");
  set("iterations_per_epoch", o.iterations_per_epoch, cfg.iterations_per_epoch,
      "TrainFoldOptions::iterations_per_epoch");
  set("val_iterations_per_epoch", o.val_iterations_per_epoch, cfg.val_iterations_per_epoch,
      "TrainFoldOptions::val_iterations_per_epoch");
  if (o.threads != 0) training::check_trainer_setting("threads", o.threads, "TrainFoldOptions::threads");
  training::TrainOptions t;
  t.device = o.device;
  t.threads = o.threads;
  t.resume = o.resume;
  t.progress_bar = o.progress_bar;
  if (o.on_epoch) {
    const int64_t epochs = cfg.num_epochs;
    t.on_epoch = [&o, epochs](const training::EpochMetrics& m) {
      EpochReport r;
      r.epoch = m.epoch;
      r.epochs = epochs;
      r.train_loss = m.train_loss;
      r.val_loss = m.val_loss;
      r.pseudo_dice = m.pseudo_dice;
      r.ema_dice = m.ema_pseudo_dice;
      r.learning_rate = m.lr;
      r.seconds = m.epoch_time;
      return o.on_epoch(r);
    };
  }
  training::RunInputs inputs =
      training::resolve_run(dataset, configuration, fold, o.plans, cfg.name, o.preprocessed, o.results);
  training::Trainer trainer(std::move(inputs), cfg, t);
  return trainer.run() == training::TrainOutcome::Finished ? TrainResult::Finished : TrainResult::Stopped;
}

}  // namespace medseg::api
