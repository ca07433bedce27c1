#include "training/trainer_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/data_files.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/json_object_reader.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "plans/plans.h"
#include "training/trainer_variants.h"

namespace fs = std::filesystem;

namespace medseg::training {

json TrainerConfig::to_json() const {
  json opt = {
      {"type", optimizer_type_name(optimizer.type)}, {"lr", optimizer.lr}, {"weight_decay", optimizer.weight_decay}};
  if (optimizer.type == OptimizerType::SGD) {
    opt["momentum"] = optimizer.momentum;
    opt["nesterov"] = optimizer.nesterov;
  } else {
    opt["betas"] = {optimizer.beta1, optimizer.beta2};
    opt["eps"] = optimizer.eps;
    opt["amsgrad"] = optimizer.amsgrad;
  }
  const json loss_json = {{"weight_ce", loss.weight_ce},
                          {"weight_dice", loss.weight_dice},
                          {"dice_smooth", loss.dice_smooth},
                          {"topk_percent", loss.topk_percent},
                          {"label_smoothing", loss.label_smoothing}};
  json j = {{"format", "medseg-trainer-config"},
            {"version", 1},
            {"name", name},
            {"num_epochs", num_epochs},
            {"iterations_per_epoch", iterations_per_epoch},
            {"val_iterations_per_epoch", val_iterations_per_epoch},
            {"optimizer", opt},
            {"poly_exponent", poly_exponent},
            {"lr_schedule", name_of(lr_schedule_names(), lr_schedule)},
            {"warmup_epochs", warmup_epochs},
            {"loss", loss_json},
            {"oversampling", to_string(oversampling)},
            {"norm", name_of(network_norm_names(), norm)},
            {"grad_clip", grad_clip},
            {"oversample_foreground", oversample_foreground},
            {"deep_supervision", deep_supervision},
            {"augment", augment},
            {"augmentation", name_of(augmentation_names(), augmentation)},
            {"augment_image_interpolation", name_of(interpolation_names(), augment_image_interpolation)},
            {"augment_seg_interpolation", name_of(interpolation_names(), augment_seg_interpolation)},
            {"dummy_2d_augmentation", dummy_2d_augmentation},
            {"checkpoint_every", checkpoint_every},
            {"ema_momentum", ema_momentum},
            {"seed", seed},
            {"amp", to_string(amp)},
            {"num_workers", num_workers},
            {"augment_device", name_of(augment_device_names(), augment_device)},
            {"checkpoint_encoder", checkpoint_encoder},
            {"use_checkpoint", use_checkpoint ? (*use_checkpoint ? 1 : 0) : -1},
            {"inplace", to_string(inplace)}};
  if (!architecture.is_null()) j["architecture"] = architecture;
  if (batch_size) j["batch_size"] = *batch_size;
  if (lr_from_scratch) j["lr_from_scratch"] = *lr_from_scratch;
  if (encoder_fit != EncoderFit::Strict) j["encoder_fit"] = name_of(encoder_fit_names(), encoder_fit);
  if (mirror_axes_2d || mirror_axes_3d) {
    j["mirror_axes"] = json::object();
    if (mirror_axes_2d) j["mirror_axes"]["2d"] = *mirror_axes_2d;
    if (mirror_axes_3d) j["mirror_axes"]["3d"] = *mirror_axes_3d;
  }
  return j;
}

std::vector<int> TrainerConfig::mirror_axes(int dim) const {
  const auto& set = dim == 2 ? mirror_axes_2d : mirror_axes_3d;
  if (set) return *set;
  std::vector<int> all;
  for (int a = 0; a < dim; ++a) all.push_back(a);
  return all;
}

const EnumNames<LrSchedule>& lr_schedule_names() {
  static const EnumNames<LrSchedule> names = {{"poly", LrSchedule::Poly}, {"cosine", LrSchedule::Cosine}};
  return names;
}

const EnumNames<NetworkNorm>& network_norm_names() {
  static const EnumNames<NetworkNorm> names = {{"plans", NetworkNorm::Plans}, {"batch", NetworkNorm::Batch}};
  return names;
}

const EnumNames<EncoderFit>& encoder_fit_names() {
  static const EnumNames<EncoderFit> names = {{"strict", EncoderFit::Strict}, {"dynamic", EncoderFit::Dynamic}};
  return names;
}

const EnumNames<Augmentation>& augmentation_names() {
  static const EnumNames<Augmentation> names = {{"nnunet", Augmentation::NnUNet}, {"da5", Augmentation::DA5}};
  return names;
}

const EnumNames<Interpolation>& interpolation_names() {
  static const EnumNames<Interpolation> names = {{"linear", Interpolation::Linear},
                                                 {"nearest", Interpolation::Nearest}};
  return names;
}

const EnumNames<data::augment::AugmentDevice>& augment_device_names() {
  using data::augment::AugmentDevice;
  static const EnumNames<AugmentDevice> names = {
      {"cpu", AugmentDevice::Cpu}, {"cuda", AugmentDevice::Cuda}, {"cpu_batched", AugmentDevice::CpuBatched}};
  return names;
}

const EnumNames<Oversampling>& oversampling_names() {
  static const EnumNames<Oversampling> names = {{"batch_tail", Oversampling::BatchTail},
                                                {"probabilistic", Oversampling::Probabilistic},
                                                {"probabilistic_batch_rate", Oversampling::ProbabilisticBatchRate}};
  return names;
}

const EnumNames<InplaceMode>& inplace_names() {
  static const EnumNames<InplaceMode> names = {
      {"auto", InplaceMode::Auto}, {"on", InplaceMode::On}, {"off", InplaceMode::Off}};
  return names;
}

std::string to_string(Oversampling o) { return name_of(oversampling_names(), o); }

InplaceMode parse_inplace(const std::string& value, const std::string& where) {
  return parse_name(inplace_names(), value, where);
}

std::string to_string(InplaceMode m) { return name_of(inplace_names(), m); }

bool resolve_inplace(InplaceMode mode, bool plans_inplace, bool data_parallel) {
  if (mode != InplaceMode::Auto) return mode == InplaceMode::On;
  // One process: nnU-Net's default (in place, one activation buffer per block less). Several ranks:
  // off. In-place ops bump the version of tensors autograd saved; under data parallelism the
  // gradient engine's hooks and our own autograd collectives (batch Dice) also run inside backward,
  // and this is where users met "modified by an inplace operation" (MONAI's ResNet grew an
  // `inplace` switch for it; nnU-Net #2070). Off costs memory, never correctness: the gradients are
  // the same either way (tests/nn/models_inplace_test.cpp).
  return data_parallel ? false : plans_inplace;
}

namespace {

// Allowed range of each numeric setting (docs/train_cli.md, "Trainer config values"). Values outside
// cannot train: 0 epochs, a negative learning rate, a momentum above 1, a clip norm below 0.
struct NumericRange {
  const char* key;
  double lo, hi;
  bool lo_open;  // (lo, hi] instead of [lo, hi]
};
constexpr NumericRange kRanges[] = {
    {"num_epochs", 1, 1e6, false},
    {"iterations_per_epoch", 1, 1e6, false},
    {"val_iterations_per_epoch", 0, 1e6, false},
    {"checkpoint_every", 1, 1e6, false},
    {"num_workers", 0, 1024, false},
    {"poly_exponent", 0, 100, false},
    {"grad_clip", 0, 1e6, true},
    {"oversample_foreground", 0, 1, false},
    {"ema_momentum", 0, 1, false},
    {"use_checkpoint", -1, 1, false},
    {"optimizer.lr", 0, 10, true},
    {"optimizer.weight_decay", 0, 1, false},
    {"optimizer.momentum", 0, 0.999999, false},
    {"optimizer.betas", 0, 0.999999, false},
    {"optimizer.eps", 0, 1, true},
    {"threads", 1, 4096, false},
    {"warmup_epochs", 0, 1e6, false},
    {"batch_size", 1, 65536, false},
    {"lr_from_scratch", 0, 10, true},
    {"loss.weight_ce", 0, 100, false},
    {"loss.weight_dice", 0, 100, false},
    {"loss.dice_smooth", 0, 1, false},
    {"loss.topk_percent", 0, 100, true},
    {"loss.label_smoothing", 0, 0.999999, false},
};

const NumericRange& range_of(const std::string& key) {
  for (const auto& r : kRanges)
    if (key == r.key) return r;
  throw Error("trainer config: no range for '" + key + "'");
}

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v == std::floor(v) && std::fabs(v) < 1e15 ? "%.0f" : "%.6g", v);
  return buf;
}

// The key's range; `prefix` is "optimizer." inside the optimizer object.
double number_in_range(const JsonObjectReader& r, const std::string& prefix, const std::string& key, double fallback) {
  const NumericRange& range = range_of(prefix + key);
  return r.number(key, range.lo, range.hi, range.lo_open, &fallback);
}

int64_t integer_in_range(const JsonObjectReader& r, const std::string& key, int64_t fallback) {
  const NumericRange& range = range_of(key);
  const int f = static_cast<int>(fallback);
  return r.integer(key, static_cast<int>(range.lo), static_cast<int>(range.hi), &f);
}

OptimizerConfig read_optimizer(const JsonObjectReader& o) {
  o.check_keys({"type", "lr", "weight_decay", "momentum", "nesterov", "betas", "eps", "amsgrad"});
  const OptimizerType type =
      o.has("type")
          ? o.choice<OptimizerType>(
                "type", {{"SGD", OptimizerType::SGD}, {"Adam", OptimizerType::Adam}, {"AdamW", OptimizerType::AdamW}})
          : OptimizerType::SGD;
  OptimizerConfig c = type == OptimizerType::SGD ? OptimizerConfig::nnunet_sgd() : OptimizerConfig::adamw();
  c.type = type;
  c.lr = number_in_range(o, "optimizer.", "lr", c.lr);
  c.weight_decay = number_in_range(o, "optimizer.", "weight_decay", c.weight_decay);
  c.momentum = number_in_range(o, "optimizer.", "momentum", c.momentum);
  c.nesterov = o.boolean("nesterov", c.nesterov);
  c.amsgrad = o.boolean("amsgrad", c.amsgrad);
  if (type == OptimizerType::SGD && c.amsgrad) throw o.error("amsgrad", "is an Adam/AdamW setting (type is SGD)");
  c.eps = number_in_range(o, "optimizer.", "eps", c.eps);
  if (o.has("betas")) {
    const NumericRange& r = range_of("optimizer.betas");
    const std::vector<double> b = o.numbers("betas", r.lo, r.hi, 2, 2);
    c.beta1 = b[0];
    c.beta2 = b[1];
  }
  if (type == OptimizerType::SGD && c.nesterov && !(c.momentum > 0))
    throw o.error("nesterov", "needs a momentum > 0 (momentum is " + format_number(c.momentum) + ")");
  return c;
}

LossConfig read_loss(const JsonObjectReader& o) {
  o.check_keys({"weight_ce", "weight_dice", "dice_smooth", "topk_percent", "label_smoothing"});
  LossConfig c;
  c.weight_ce = number_in_range(o, "loss.", "weight_ce", c.weight_ce);
  c.weight_dice = number_in_range(o, "loss.", "weight_dice", c.weight_dice);
  c.dice_smooth = number_in_range(o, "loss.", "dice_smooth", c.dice_smooth);
  c.topk_percent = number_in_range(o, "loss.", "topk_percent", c.topk_percent);
  c.label_smoothing = number_in_range(o, "loss.", "label_smoothing", c.label_smoothing);
  if (c.weight_ce == 0 && c.weight_dice == 0)
    throw o.error("weight_ce", "and weight_dice are both 0 (nothing to train)");
  if (c.weight_ce == 0 && (c.topk() || c.label_smoothing > 0))
    throw o.error("weight_ce", "is 0, but topk_percent or label_smoothing set the CE term");
  return c;
}

// Patch axes 0..dim-1, each at most once ([] = no mirroring).
std::vector<int> distinct_axes(const JsonObjectReader& m, const json& raw, const std::string& key, int dim) {
  if (raw.at(key).is_array() && raw.at(key).empty()) return {};
  std::vector<int> axes = m.integers(key, 0, dim - 1, static_cast<std::size_t>(dim));
  std::vector<int> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) throw m.error(key, "names an axis twice");
  return axes;
}

}  // namespace

void check_trainer_setting(const std::string& key, double value, const std::string& where) {
  const NumericRange& r = range_of(key);
  if ((r.lo_open ? value > r.lo : value >= r.lo) && value <= r.hi) return;
  throw Error(where + " is " + format_number(value) + " (must be " + (r.lo_open ? "> " : ">= ") + format_number(r.lo) +
              " and <= " + format_number(r.hi) + ")");
}

namespace {

const std::set<std::string> kTrainerConfigKeys = {"format",
                                                  "version",
                                                  "name",
                                                  "num_epochs",
                                                  "iterations_per_epoch",
                                                  "val_iterations_per_epoch",
                                                  "optimizer",
                                                  "poly_exponent",
                                                  "lr_schedule",
                                                  "warmup_epochs",
                                                  "loss",
                                                  "oversampling",
                                                  "norm",
                                                  "grad_clip",
                                                  "oversample_foreground",
                                                  "deep_supervision",
                                                  "augment",
                                                  "augmentation",
                                                  "augment_image_interpolation",
                                                  "augment_seg_interpolation",
                                                  "dummy_2d_augmentation",
                                                  "checkpoint_every",
                                                  "ema_momentum",
                                                  "seed",
                                                  "amp",
                                                  "num_workers",
                                                  "augment_device",
                                                  "checkpoint_encoder",
                                                  "use_checkpoint",
                                                  "inplace",
                                                  "mirror_axes",
                                                  "architecture",
                                                  "batch_size",
                                                  "lr_from_scratch",
                                                  "encoder_fit",
                                                  "description"};

// How long the run is, how often it saves, how many loader threads.
void read_run_length(const JsonObjectReader& r, TrainerConfig& c) {
  c.num_epochs = integer_in_range(r, "num_epochs", c.num_epochs);
  c.iterations_per_epoch = integer_in_range(r, "iterations_per_epoch", c.iterations_per_epoch);
  c.val_iterations_per_epoch = integer_in_range(r, "val_iterations_per_epoch", c.val_iterations_per_epoch);
  c.checkpoint_every = integer_in_range(r, "checkpoint_every", c.checkpoint_every);
  c.num_workers = static_cast<int>(integer_in_range(r, "num_workers", c.num_workers));
  if (r.has("batch_size")) c.batch_size = integer_in_range(r, "batch_size", 2);
}

// The optimizer, its schedule and warm-up, the loss, the gradient clip and the EMA of the validation Dice.
void read_optimization(const JsonObjectReader& r, TrainerConfig& c) {
  c.poly_exponent = number_in_range(r, "", "poly_exponent", c.poly_exponent);
  if (r.has("lr_schedule")) c.lr_schedule = r.choice("lr_schedule", lr_schedule_names());
  c.warmup_epochs = integer_in_range(r, "warmup_epochs", c.warmup_epochs);
  if (c.warmup_epochs >= c.num_epochs)
    throw r.error("warmup_epochs", concat("is ", c.warmup_epochs, ", not below num_epochs (", c.num_epochs, ")"));
  if (r.has("loss")) c.loss = read_loss(r.object("loss", true));
  if (r.has("optimizer")) c.optimizer = read_optimizer(r.object("optimizer", true));
  if (r.has("lr_from_scratch")) c.lr_from_scratch = number_in_range(r, "", "lr_from_scratch", 1);
  if (r.has("encoder_fit")) c.encoder_fit = r.choice("encoder_fit", encoder_fit_names());
  c.grad_clip = number_in_range(r, "", "grad_clip", c.grad_clip);
  c.ema_momentum = number_in_range(r, "", "ema_momentum", c.ema_momentum);
}

// Which patches are drawn and how they are augmented (where, with which pipeline and interpolation, which mirrors).
void read_sampling_and_augmentation(const JsonObjectReader& r, const json& j, TrainerConfig& c) {
  if (r.has("oversampling")) c.oversampling = r.choice<Oversampling>("oversampling", oversampling_names());
  c.oversample_foreground = number_in_range(r, "", "oversample_foreground", c.oversample_foreground);
  c.augment = r.boolean("augment", c.augment);
  if (r.has("augmentation")) c.augmentation = r.choice("augmentation", augmentation_names());
  for (auto [key, value] : {std::pair{"augment_image_interpolation", &c.augment_image_interpolation},
                            std::pair{"augment_seg_interpolation", &c.augment_seg_interpolation}})
    if (r.has(key)) *value = r.choice(key, interpolation_names());
  c.dummy_2d_augmentation = r.boolean("dummy_2d_augmentation", c.dummy_2d_augmentation);
  if (r.has("augment_device")) c.augment_device = r.choice("augment_device", augment_device_names());
  if (r.has("mirror_axes")) {
    const JsonObjectReader m = r.object("mirror_axes", true);
    m.check_keys({"2d", "3d"});
    const json& raw = j.at("mirror_axes");
    if (m.has("2d")) c.mirror_axes_2d = distinct_axes(m, raw, "2d", 2);
    if (m.has("3d")) c.mirror_axes_3d = distinct_axes(m, raw, "3d", 3);
  }
}

// The network the trainer builds (norm, deep supervision, checkpointing, in-place ops, its own architecture), its
// precision and the seed of its weights and data.
void read_network_and_precision(const JsonObjectReader& r, const json& j, const std::string& src, TrainerConfig& c) {
  if (r.has("norm")) c.norm = r.choice("norm", network_norm_names());
  c.deep_supervision = r.boolean("deep_supervision", c.deep_supervision);
  c.checkpoint_encoder = r.boolean("checkpoint_encoder", c.checkpoint_encoder);
  if (const int64_t v = integer_in_range(r, "use_checkpoint", -1); v >= 0) c.use_checkpoint = v == 1;
  if (r.has("inplace")) c.inplace = r.choice("inplace", inplace_names());
  if (r.has("seed")) c.seed = json_as<uint64_t>(j.at("seed"), "key 'seed'", src);
  if (r.has("amp"))
    c.amp =
        parse_amp(r.choice<std::string>("amp", {{"auto", "auto"}, {"fp16", "fp16"}, {"bf16", "bf16"}, {"off", "off"}}),
                  "amp", src);
  if (r.has("architecture")) {
    // Checked here as plans.json's block is (names, ranges); its fit to a configuration's patch size when used.
    (void)planning::architecture_from_json(j.at("architecture"), src, "key 'architecture'");
    c.architecture = j.at("architecture");
  }
}

}  // namespace

TrainerConfig trainer_config_from_json(const json& j, const std::string& src) {
  const JsonObjectReader r(j, src, "", "a trainer config");
  r.check_keys(kTrainerConfigKeys);
  TrainerConfig c;
  c.source = src;
  if (r.has("name")) c.name = r.file_name("name");  // like the trainer name, a name and never a path
  read_run_length(r, c);
  read_optimization(r, c);
  read_sampling_and_augmentation(r, j, c);
  read_network_and_precision(r, j, src, c);
  return c;
}

TrainerConfig load_trainer_config(const std::string& path) { return trainer_config_from_json(read_json(path), path); }

std::vector<std::string> trainer_config_dirs() {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("MEDSEG_CONFIG_DIR")) dirs.push_back(d);
  dirs.push_back(shipped_data_dir("configs"));
  return dirs;
}

TrainerConfig find_trainer_config(const std::string& name) {
  if (fs::exists(name) && fs::is_regular_file(name)) return load_trainer_config(name);
  check_path_component(name, "trainer config (--tr)");  // a name under configs/, not a path out of it
  const std::vector<std::string> dirs = trainer_config_dirs();
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / (name + ".json");
    if (fs::exists(p)) return load_trainer_config(p.string());
  }
  // A config file of the name wins over the table, so a user's file can replace a variant.
  for (const auto& d : dirs) {
    const fs::path table = fs::path(d) / "trainer_variants.json";
    if (!fs::exists(table)) continue;
    if (auto v = trainer_variant(name, table.string(), find_trainer_config)) return *v;
  }
  if (name == "nnUNetTrainer") return TrainerConfig{};
  throw Error("trainer config '" + name + "' not found (looked for a file of that name, for " + name +
              ".json and in trainer_variants.json in " + join(dirs, ", ") + "; set MEDSEG_CONFIG_DIR to add a folder)");
}

}  // namespace medseg::training
