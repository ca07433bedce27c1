#include "training/trainer_config.h"

#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg::training {

json TrainerConfig::to_json() const {
  json opt = {{"type", optimizer.type}, {"lr", optimizer.lr}, {"weight_decay", optimizer.weight_decay}};
  if (optimizer.type == "SGD") {
    opt["momentum"] = optimizer.momentum;
    opt["nesterov"] = optimizer.nesterov;
  } else {
    opt["betas"] = {optimizer.beta1, optimizer.beta2};
    opt["eps"] = optimizer.eps;
  }
  return {{"format", "medseg-trainer-config"}, {"version", 1}, {"name", name}, {"num_epochs", num_epochs},
          {"iterations_per_epoch", iterations_per_epoch}, {"val_iterations_per_epoch", val_iterations_per_epoch},
          {"optimizer", opt}, {"poly_exponent", poly_exponent}, {"grad_clip", grad_clip},
          {"oversample_foreground", oversample_foreground}, {"deep_supervision", deep_supervision},
          {"augment", augment}, {"checkpoint_every", checkpoint_every}, {"ema_momentum", ema_momentum},
          {"seed", seed}, {"amp", to_string(amp)}, {"num_workers", num_workers}, {"checkpoint_encoder", checkpoint_encoder},
          {"use_checkpoint", use_checkpoint}};
}

TrainerConfig trainer_config_from_json(const json& j, const std::string& src) {
  static const std::set<std::string> known{"format", "version", "name", "num_epochs", "iterations_per_epoch",
                                           "val_iterations_per_epoch", "optimizer", "poly_exponent", "grad_clip",
                                           "oversample_foreground", "deep_supervision", "augment", "checkpoint_every",
                                           "ema_momentum", "seed", "amp", "num_workers", "checkpoint_encoder",
                                           "use_checkpoint", "description"};
  if (!j.is_object()) throw FileError(src, "trainer config must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) throw FileError(src, "unknown trainer config key '" + it.key() + "'");
  TrainerConfig c;
  c.source = src;
  auto get = [&](const char* k, auto& dst) {
    if (!j.contains(k)) return;
    try {
      j.at(k).get_to(dst);
    } catch (const std::exception& e) {
      throw FileError(src, std::string("key '") + k + "' has the wrong type");
    }
  };
  get("name", c.name);
  get("num_epochs", c.num_epochs);
  get("iterations_per_epoch", c.iterations_per_epoch);
  get("val_iterations_per_epoch", c.val_iterations_per_epoch);
  get("poly_exponent", c.poly_exponent);
  get("grad_clip", c.grad_clip);
  get("oversample_foreground", c.oversample_foreground);
  get("deep_supervision", c.deep_supervision);
  get("augment", c.augment);
  get("checkpoint_every", c.checkpoint_every);
  get("ema_momentum", c.ema_momentum);
  get("seed", c.seed);
  std::string amp = to_string(c.amp);
  get("amp", amp);
  c.amp = parse_amp(amp, "amp", src);
  get("num_workers", c.num_workers);
  get("checkpoint_encoder", c.checkpoint_encoder);
  get("use_checkpoint", c.use_checkpoint);
  if (j.contains("optimizer")) {
    const json& o = j.at("optimizer");
    if (!o.is_object()) throw FileError(src, "'optimizer' must be an object");
    const std::string type = o.value("type", std::string("SGD"));
    c.optimizer = type == "AdamW" ? OptimizerConfig::adamw() : OptimizerConfig::nnunet_sgd();
    c.optimizer.type = type;
    c.optimizer.lr = o.value("lr", c.optimizer.lr);
    c.optimizer.weight_decay = o.value("weight_decay", c.optimizer.weight_decay);
    c.optimizer.momentum = o.value("momentum", c.optimizer.momentum);
    c.optimizer.nesterov = o.value("nesterov", c.optimizer.nesterov);
    if (o.contains("betas")) {
      c.optimizer.beta1 = o.at("betas").at(0).get<double>();
      c.optimizer.beta2 = o.at("betas").at(1).get<double>();
    }
    c.optimizer.eps = o.value("eps", c.optimizer.eps);
    if (type != "SGD" && type != "AdamW") throw FileError(src, "optimizer type must be SGD or AdamW, got " + type);
  }
  if (c.num_epochs < 1 || c.iterations_per_epoch < 1 || c.val_iterations_per_epoch < 0 || c.checkpoint_every < 1)
    throw FileError(src, "num_epochs, iterations_per_epoch, checkpoint_every must be >= 1");
  return c;
}

TrainerConfig load_trainer_config(const std::string& path) { return trainer_config_from_json(read_json(path), path); }

TrainerConfig find_trainer_config(const std::string& name) {
  if (fs::exists(name) && fs::is_regular_file(name)) return load_trainer_config(name);
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("MEDSEG_CONFIG_DIR")) dirs.push_back(d);
#ifdef MEDSEG_SOURCE_CONFIG_DIR
  dirs.push_back(MEDSEG_SOURCE_CONFIG_DIR);
#endif
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / (name + ".json");
    if (fs::exists(p)) return load_trainer_config(p.string());
  }
  if (name == "nnUNetTrainer") return TrainerConfig{};
  throw Error("trainer config '" + name + "' not found (looked for a file of that name and for " + name +
              ".json in configs/; set MEDSEG_CONFIG_DIR to add a folder)");
}

}  // namespace medseg::training
