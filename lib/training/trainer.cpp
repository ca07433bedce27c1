#include "training/trainer.h"

#include <ATen/Parallel.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "checkpoint/checkpoint.h"
#include "checkpoint/optimizer_state.h"
#include "core/ordered_json_io.h"
#include "core_torch/autocast.h"
#include "core/digest.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/torch_compat.h"
#include "core_torch/torch_memory.h"
#include "core_torch/torch_settings.h"
#include "data/augment/device_augment.h"
#include "data/case_digest.h"
#include "data/previous_stage_source.h"
#include "data/data_loader.h"
#include "data/patch_sampler.h"
#include "data/preprocessed_source.h"
#include "data/region_targets.h"
#include "distributed/halo.h"
#include "distributed/process_group.h"
#include "models/network.h"
#include "planning/memory_check.h"
#include "planning/spatial_parallel.h"
#include "training/data_parallel.h"
#include "training/final_validation.h"
#include "training/grad_scaler.h"
#include "training/interrupt.h"
#include "training/loss.h"
#include "training/metrics_log.h"
#include "training/pretrained.h"
#include "training/pretrained_encoder.h"
#include "training/progress_plot.h"
#include "training/rank_fit.h"
#include "training/schedule.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace medseg::training {
// The state a checkpoint carries is defined below training (lib/checkpoint): inference reads it too.
using checkpoint::Checkpoint;
using checkpoint::kCheckpointBest;
using checkpoint::kCheckpointFinal;
using checkpoint::kCheckpointLatest;
using checkpoint::load_checkpoint;
using checkpoint::load_weights;
using checkpoint::module_weights;
using checkpoint::save_checkpoint;

// What --c resumes from: the newest checkpoint that loads, and the ones skipped (name, why).
struct ResumePoint {
  std::optional<Checkpoint> checkpoint;
  std::string name;
  std::vector<std::pair<std::string, std::string>> skipped;
};

struct Trainer::State {
  // Threads, cuDNN flags, determinism and seed for this run; the process gets its own back when
  // the trainer ends (first member: restored after everything else is gone).
  std::unique_ptr<ScopedTorchSettings> torch_settings;
  RunInputs in;
  TrainerConfig cfg;
  TrainOptions opt;
  torch::Device device{torch::kCPU};
  std::optional<torch::Device> augment_device;  // set: training batches augmented there (device_augment.h)
  bool cuda = false, amp_on = false;
  c10::ScalarType amp_dtype = at::kFloat;
  models::SegmentationNetwork net{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<DataParallel> dp;  // the process group part; identity for one process
  std::vector<at::Tensor> params;
  GradScaler scaler{GradScalerOptions{}};
  DiceCeOptions loss_opts;
  std::vector<double> ds_weights;
  std::shared_ptr<const data::CaseSource> train_src, val_src;
  data::PipelineConfig train_pipe, val_pipe;
  std::unique_ptr<data::DataLoader> train_loader, val_loader;

  // Progress; all of it goes into checkpoints.
  int64_t epoch = 0;      // current (0-based) epoch
  int64_t next_iter = 0;  // next training iteration within the epoch
  double loss_sum = 0;    // training loss summed over the epoch's finished iterations
  std::vector<EpochMetrics> log;
  std::optional<double> ema;
  double best_ema = -std::numeric_limits<double>::infinity();
  std::vector<int64_t> mirror_axes;

  std::string path(const char* name) const { return (fs::path(in.folders.fold_folder) / name).string(); }
  std::string metrics_path() const { return path("metrics.jsonl"); }

  spdlog::sink_ptr file_sink;  // training_log.txt, attached to the default logger while the run lives

  Checkpoint to_checkpoint() const;
  void restore(const Checkpoint& ck);
  ResumePoint newest_valid_checkpoint() const;
  void resume_from(ResumePoint& from);
  void open_run_folder();
  void load_pretrained();
  void load_pretrained_encoder();
  void save(const char* name);
  void start_loaders();
  std::vector<at::Tensor> device_targets(const data::Batch& b) const;
  bool train_epoch();  // false when interrupted
  void validate_epoch(EpochMetrics& m);
  void end_epoch(EpochMetrics& m, double seconds);

  // The constructor's steps (Trainer::Trainer).
  void apply_trainer_settings();
  void choose_device_and_precision();
  void check_memory_fits(const planning::ConfigurationPlan& plan, int slab_axis) const;
  void build_network_architecture(const planning::ConfigurationPlan& plan, int slab_axis);
  void configure_optimizers();
  void build_loss(const planning::ConfigurationPlan& plan);
  void build_data_pipelines(const planning::ConfigurationPlan& plan);
  void open_case_sources();
  void check_ranks_agree();
};

namespace {

void apply_loss_config(const LossConfig& c, DiceCeOptions& o) {
  MEDSEG_CHECK(!o.regions || !(c.topk() || c.label_smoothing > 0),
               "trainer config: the top-k loss and label smoothing need labels, not regions (as nnU-Net's "
               "Topk trainers assert)");
  o.weight_ce = c.weight_ce;
  o.weight_dice = c.weight_dice;
  o.smooth = c.dice_smooth;
  o.topk_percent = c.topk_percent;
  o.label_smoothing = c.label_smoothing;
}

void apply_oversampling(const TrainerConfig& c, data::PipelineConfig& p) {
  if (c.oversampling == Oversampling::BatchTail) return;
  p.probabilistic_oversampling = true;
  if (c.oversampling == Oversampling::ProbabilisticBatchRate)
    p.oversample = data::batch_tail_share(p.batch_size, p.oversample);
}

planning::OptimizerKind optimizer_kind(const OptimizerConfig& o) {
  if (o.type == OptimizerType::SGD) return planning::OptimizerKind::SgdMomentum;
  return o.amsgrad ? planning::OptimizerKind::AdamAmsgrad : planning::OptimizerKind::AdamW;
}

// What every rank of a run must agree on before the first step.
std::string run_digest(const RunInputs& in, const TrainerConfig& cfg) {
  const std::string all = in.plans_json.dump() + in.dataset_json.dump() + cfg.to_json().dump() + in.configuration +
                          in.fold + json(in.train_ids).dump() + json(in.val_ids).dump();
  return std::to_string(fnv1a(all));
}

void copy_run_files(const RunInputs& in, const TrainerConfig& cfg) {
  fs::create_directories(in.folders.fold_folder);
  const fs::path m(in.folders.model_folder);
  write_json((m / "plans.json").string(), in.plans_json);
  write_ordered_json((m / "dataset.json").string(), in.dataset_json);
  if (!in.fingerprint_json.is_null()) write_json((m / "dataset_fingerprint.json").string(), in.fingerprint_json);
  write_json((m / "trainer_config.json").string(), cfg.to_json());
}

}  // namespace

// The constructor's steps, in nnU-Net's initialize() order (build_network_architecture, configure_optimizers,
// _build_loss, then the data): each reads what the ones before it set.
Trainer::Trainer(RunInputs inputs, TrainerConfig config, TrainOptions options) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.in = std::move(inputs);
  s.cfg = std::move(config);
  s.opt = std::move(options);
  s.apply_trainer_settings();
  s.choose_device_and_precision();
  const auto& plan = s.in.plans.configuration(s.in.configuration);
  const int slab_axis = check_ranks_fit(plan, s.opt.group ? s.opt.group->size() : 1, s.opt.spatial_parallel);
  s.dp = std::make_unique<DataParallel>(s.opt.group, plan.batch_size, slab_axis);
  if (s.opt.inplace) s.cfg.inplace = *s.opt.inplace;
  s.check_memory_fits(plan, slab_axis);
  s.build_network_architecture(plan, slab_axis);
  s.configure_optimizers();
  s.build_loss(plan);
  s.build_data_pipelines(plan);
  s.open_case_sources();
  s.check_ranks_agree();
  // Nothing is written yet: run() and validate() check the fold folder first (open_run_folder).
}

// The command's overrides and what the trainer config changes in the run's plans.
void Trainer::State::apply_trainer_settings() {
  if (opt.amp) cfg.amp = *opt.amp;
  if (cfg.warmup_epochs >= cfg.num_epochs)
    spdlog::warn(
        "trainer '{}': the warm-up ({} epochs) outlasts the run's {} epochs; the learning rate rises "
        "for the whole run, as in nnU-Net",
        cfg.name, cfg.warmup_epochs, cfg.num_epochs);
  if (cfg.norm == NetworkNorm::Batch) {
    // Per-rank batch statistics would differ from one process's; nnU-Net syncs them (SyncBatchNorm).
    MEDSEG_CHECK(!opt.group || opt.group->size() <= 1, "trainer '", cfg.name,
                 "': batch norm across ranks needs synchronised statistics (nnU-Net's "
                 "SyncBatchNorm), which medseg does not implement; train it on one process");
    use_batch_norm(in);
  }
  if (!cfg.architecture.is_null()) use_trainer_architecture(in, cfg.architecture);
  if (cfg.batch_size) use_trainer_batch_size(in, *cfg.batch_size);
  // One output: nnU-Net's AbstractPrimus trains without deep supervision whatever the base trainer says.
  if (in.plans.configuration(in.configuration).architecture.primus) cfg.deep_supervision = false;
}

// The device, autocast, and the process-wide torch settings this run holds while it lives.
void Trainer::State::choose_device_and_precision() {
  device = torch::Device(opt.device);
  cuda = device.is_cuda();
  MEDSEG_CHECK(!cuda || torch::cuda::is_available(), "-device ", opt.device,
               " requested but CUDA is not available in this build/machine");
  augment_device = data::augment::resolve_augment_device(cfg.augment_device, device);
  const AutocastSetting amp = autocast_setting(cfg.amp, cuda);
  amp_on = amp.enabled;
  amp_dtype = amp.dtype;
  TorchSettings ts;
  ts.threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency());
  ts.cudnn_benchmark = opt.cudnn_benchmark == "on";
  ts.deterministic = opt.deterministic;
  ts.seed = static_cast<uint64_t>(cfg.seed);
  torch_settings = std::make_unique<ScopedTorchSettings>(ts);
}

// Refuses a plan that cannot fit before the network is built (planning/memory_check.h).
void Trainer::State::check_memory_fits(const planning::ConfigurationPlan& plan, int slab_axis) const {
  planning::TrainingStep step{static_cast<int>(in.in_channels), static_cast<int>(in.num_classes), {}};
  step.options.amp = amp_on;
  step.options.optimizer = optimizer_kind(cfg.optimizer);
  step.options.deep_supervision = cfg.deep_supervision;
  step.options.checkpointing =
      plan.architecture.swin ? cfg.use_checkpoint : std::optional<bool>(cfg.checkpoint_encoder);
  step.options.device = cuda ? planning::StepDevice::Cuda : planning::StepDevice::Cpu;
  planning::check_training_fits(
      plan.architecture,
      slab_axis < 0 ? plan.patch_size : planning::slab_patch(plan.patch_size, slab_axis, opt.spatial_parallel),
      dp->largest_share(), step, device_memory_limit(opt.device), in.folders.plans_file,
      "configuration '" + in.configuration + "'");
}

void Trainer::State::build_network_architecture(const planning::ConfigurationPlan& plan, int slab_axis) {
  models::NetworkBuildOptions nb;
  nb.deep_supervision = cfg.deep_supervision;
  nb.checkpoint_encoder = cfg.checkpoint_encoder;
  nb.use_checkpoint_override = cfg.use_checkpoint;
  nb.inplace = resolve_inplace(cfg.inplace, plan.architecture.nonlin_inplace, dp->active());
  net = models::build_network_from_plan(plan.architecture, in.in_channels, in.num_classes, nb);
  net->to(device);
  if (slab_axis >= 0) {
    net->set_spatial_shard(distributed::shard_over_group(*opt.group, slab_axis));
    spdlog::info("spatial parallelism: every patch in {} slabs along axis {} (halo exchange between ranks)",
                 opt.spatial_parallel, slab_axis);
  }
}

void Trainer::State::configure_optimizers() {
  optimizer = make_optimizer(*net, cfg.optimizer);
  params = unique_parameters(*net);
  GradScalerOptions gs;
  gs.enabled = amp_on && amp_dtype == at::kHalf;  // bf16 has fp32's range: no scaling needed
  scaler = GradScaler(gs);
}

void Trainer::State::build_loss(const planning::ConfigurationPlan& plan) {
  loss_opts.batch_dice = plan.batch_dice;
  loss_opts.batch_sum = dp->batch_sum();
  loss_opts.spatial_sum = dp->spatial_sum();
  loss_opts.regions = !in.regions.empty();
  loss_opts.ignore_channel = loss_opts.regions && in.ignore_label.has_value();
  apply_loss_config(cfg.loss, loss_opts);
}

// The training and validation pipelines: augmentation, this rank's share of each batch, oversampling, mirroring.
void Trainer::State::build_data_pipelines(const planning::ConfigurationPlan& plan) {
  data::AugmentChoice aug;
  aug.da5 = cfg.augmentation == Augmentation::DA5;
  aug.nearest_image = cfg.augment_image_interpolation == Interpolation::Nearest;
  aug.nearest_seg = cfg.augment_seg_interpolation == Interpolation::Nearest;
  aug.dummy_2d = cfg.dummy_2d_augmentation;
  train_pipe = data::training_pipeline(plan, cfg.deep_supervision, cfg.oversample_foreground, aug);
  val_pipe = data::validation_pipeline(plan, cfg.deep_supervision, cfg.oversample_foreground);
  for (auto* p : {&train_pipe, &val_pipe}) {
    p->share_begin = dp->share().begin;
    p->share_end = dp->share().end;
    apply_oversampling(cfg, *p);
  }
  // nnUNetTrainerNoDA: the validation transforms for training, and the loader crops the final patch.
  if (!cfg.augment) train_pipe = data::without_augmentation(train_pipe);
  train_pipe.device_augment = augment_device.has_value();  // validation batches are not augmented
  ds_weights = deep_supervision_weights(static_cast<int>(std::max<size_t>(1, train_pipe.ds_scales.size())));
  // The trainer config's axes are nnU-Net's, of the patch (0..dim-1); the pipeline's are of
  // (z, y, x), where a 2D patch's z is its slice.
  train_pipe.aug.mirror_axes.clear();
  for (int a : cfg.mirror_axes(plan.dim())) {
    train_pipe.aug.mirror_axes.push_back(a + (train_pipe.is_2d ? 1 : 0));
    mirror_axes.push_back(a);
  }
}

// The preprocessed cases of the split; a cascade stage's carry the previous stage's predictions as channels.
void Trainer::State::open_case_sources() {
  train_src = std::make_shared<data::PreprocessedCaseSource>(in.folders.data_folder, in.train_ids);
  val_src = std::make_shared<data::PreprocessedCaseSource>(in.folders.data_folder, in.val_ids);
  if (in.previous_stage_folder.empty()) return;
  MEDSEG_CHECK(!augment_device, "configuration '", in.configuration,
               "' is a cascade stage: device augmentation does not carry "
               "its previous-stage channels yet; set augment_device to cpu in the trainer config");
  const std::string hint = previous_stage_hint(in);
  train_src =
      std::make_shared<data::PreviousStageSource>(train_src, in.previous_stage_folder, in.previous_stage_labels, hint);
  val_src =
      std::make_shared<data::PreviousStageSource>(val_src, in.previous_stage_folder, in.previous_stage_labels, hint);
}

// Every rank trains the same run: the same inputs and settings, and (each host may read its own copy of the data)
// the same case bytes.
void Trainer::State::check_ranks_agree() {
  dp->check_same("plans, dataset.json, trainer config and split", run_digest(in, cfg));
  if (!dp->active()) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto cases = data::case_digests(*train_src, in.folders.data_folder);
  for (auto& c : data::case_digests(*val_src, in.folders.data_folder)) cases.push_back(std::move(c));
  spdlog::info("data digest of {} case(s) in {:.2f} s", cases.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  dp->check_same_cases(cases);
}

Trainer::~Trainer() {
  // Drop this run's file sink, and only it: another trainer may have added its own since.
  if (s_->file_sink) {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), s_->file_sink), sinks.end());
  }
}

// The model folder's copies of plans, dataset.json and config, and training_log.txt: written only
// once the command's inputs are known to be good, so a refused command leaves no folder behind.
void Trainer::State::open_run_folder() {
  copy_run_files(in, cfg);
  // File log next to the checkpoints, as nnU-Net's training_log.txt.
  file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path("training_log.txt"));
  file_sink->set_pattern("[%Y-%m-%d %H:%M:%S] %l: %v");
  spdlog::default_logger()->sinks().push_back(file_sink);

  spdlog::info("{} | {} | fold {} | {} training, {} validation cases", in.folders.dataset_name, in.configuration,
               in.fold, in.train_ids.size(), in.val_ids.size());
  spdlog::info("network {}: {} parameters; patch {}x{}x{}, batch {}; device {}, AMP {}", net->class_name(),
               net->parameter_count(), train_pipe.final_patch[0], train_pipe.final_patch[1], train_pipe.final_patch[2],
               train_pipe.batch_size, device.str(), amp_on ? (amp_dtype == at::kHalf ? "fp16" : "bf16") : "off");
  const data::augment::AugmentConfig& a = train_pipe.aug;
  const Shape3& L = train_pipe.loader_patch;
  spdlog::info("augmentation {}{}: loader patch {}x{}x{}, dummy 2D {}, spatial interpolation image {} / labels {}",
               !train_pipe.augment ? "off" : (cfg.augmentation == Augmentation::DA5 ? "DA5" : "nnU-Net"),
               train_pipe.device_augment ? " (batched on " + augment_device->str() + ")" : std::string(), L[0], L[1],
               L[2], a.dummy_2d ? "on" : "off", a.nearest_image ? "nearest" : "linear",
               a.nearest_seg ? "nearest" : "linear");
  if (!in.previous_stage_folder.empty())
    spdlog::info("cascade stage: {} previous-stage channel(s) (labels {}) from {}", in.previous_stage_labels.size(),
                 json(in.previous_stage_labels).dump(), in.previous_stage_folder);
}

const std::string& Trainer::fold_folder() const { return s_->in.folders.fold_folder; }

Checkpoint Trainer::State::to_checkpoint() const {
  Checkpoint ck;
  ck.epoch = epoch;
  ck.weights = module_weights(*net);
  ck.optimizer = checkpoint::capture_optimizer_state(*optimizer, *net);
  ck.grad_scaler = scaler.state();
  ck.rng = checkpoint::capture_rng_states();
  ck.sampler = {{"seed", cfg.seed}, {"epoch", epoch}, {"next_iteration", next_iter}, {"train_loss_sum", loss_sum}};
  ck.logs = to_json(log);
  ck.ema = {{"ema", ema ? json(*ema) : json(nullptr)},
            {"best_ema", std::isfinite(best_ema) ? json(best_ema) : json(nullptr)}};
  ck.plans = in.plans_json;
  ck.dataset = in.dataset_json;
  ck.trainer_config = cfg.to_json();
  ck.fingerprint = in.fingerprint_json;
  ck.extra = {{"configuration", in.configuration},
              {"plans_name", in.plans_name},
              {"trainer_name", cfg.name},
              {"fold", in.fold},
              {"in_channels", in.in_channels},
              {"num_classes", in.num_classes},
              // No axes: nnU-Net's None (nnUNetTrainerNoMirroring), which prediction reads as no mirroring.
              {"inference_allowed_mirroring_axes", mirror_axes.empty() ? json(nullptr) : json(mirror_axes)},
              {"network_class_name", net->class_name()}};
  if (!opt.pretrained_weights.empty()) ck.extra["pretrained_weights"] = opt.pretrained_weights;
  if (opt.pretrained_encoder) ck.extra["pretrained_weights"] = opt.pretrained_encoder->source;
  return ck;
}

void Trainer::State::restore(const Checkpoint& ck) {
  load_weights(*net, ck.weights, true);
  if (!ck.optimizer.type.empty()) checkpoint::restore_optimizer_state(*optimizer, *net, ck.optimizer);
  if (!ck.grad_scaler.empty()) scaler.load_state(ck.grad_scaler);
  checkpoint::restore_rng_states(ck.rng);
  epoch = ck.epoch;
  next_iter = ck.sampler.value("next_iteration", int64_t{0});
  loss_sum = ck.sampler.value("train_loss_sum", 0.0);
  if (ck.sampler.contains("seed") && ck.sampler.at("seed").get<uint64_t>() != cfg.seed)
    spdlog::warn("checkpoint was trained with data seed {}, config says {}; keeping the checkpoint's",
                 ck.sampler.at("seed").get<uint64_t>(), cfg.seed);
  if (ck.sampler.contains("seed")) cfg.seed = ck.sampler.at("seed").get<uint64_t>();
  log = metrics_from_json_array(ck.logs);
  ema.reset();
  if (ck.ema.is_object() && !ck.ema.at("ema").is_null()) ema = ck.ema.at("ema").get<double>();
  best_ema = (ck.ema.is_object() && !ck.ema.at("best_ema").is_null()) ? ck.ema.at("best_ema").get<double>()
                                                                      : -std::numeric_limits<double>::infinity();
  // Lines appended after this checkpoint was written belong to epochs that will be redone.
  if (dp->writer() && fs::exists(metrics_path())) truncate_metrics(metrics_path(), static_cast<int64_t>(log.size()));
}

// A checkpoint that does not load (corrupt, truncated, another format) is skipped, not fatal: an
// older valid one still resumes the run. It is left on disk for the user; a later save of the
// same name replaces it as any save does.
ResumePoint Trainer::State::newest_valid_checkpoint() const {
  ResumePoint r;
  const auto key = [](const Checkpoint& c) {
    return std::make_pair(c.epoch, c.sampler.value("next_iteration", int64_t{0}));
  };
  for (const char* name : {kCheckpointFinal, kCheckpointLatest, kCheckpointBest}) {
    if (!fs::exists(path(name))) continue;
    try {
      Checkpoint ck = load_checkpoint(path(name));
      if (!r.checkpoint || key(ck) > key(*r.checkpoint)) {
        r.checkpoint = std::move(ck);
        r.name = name;
      }
    } catch (const std::exception& e) { r.skipped.emplace_back(name, e.what()); }
  }
  if (!r.checkpoint && !r.skipped.empty()) {
    std::string why;
    for (const auto& [name, what] : r.skipped) why += (why.empty() ? "" : "; ") + what;
    throw FileError(in.folders.fold_folder,
                    "--c: no checkpoint here can be loaded (" + why + "); move them aside to start a new training");
  }
  return r;
}

void Trainer::State::resume_from(ResumePoint& from) {
  for (const auto& [name, what] : from.skipped) spdlog::warn("--c: skipped {} (kept as it is): {}", name, what);
  if (!from.checkpoint) {
    spdlog::warn("--c: no checkpoint in {}; starting a new training", in.folders.fold_folder);
    // Lines of epochs that ended before any checkpoint was written: they will be redone.
    if (dp->writer() && fs::exists(metrics_path())) truncate_metrics(metrics_path(), 0);
    return;
  }
  MEDSEG_CHECK_FILE(!from.checkpoint->weights_only, path(from.name.c_str()),
                    "--c: this is a weights-only checkpoint (e.g. from medseg_checkpoint "
                    "average): it holds no optimizer, RNG or progress to continue from; use it "
                    "with medseg_predict, or move it aside to continue from another");
  restore(*from.checkpoint);
  from.checkpoint.reset();
  spdlog::info("resumed from {} (epoch {}, iteration {})", from.name, epoch, next_iter);
}

void Trainer::State::load_pretrained() {
  if (opt.pretrained_encoder) return load_pretrained_encoder();
  const auto r = load_pretrained_weights(*net, opt.pretrained_weights, in.dataset_json.at("labels"));
  spdlog::info("pretrained weights: {} tensors from {}", r.loaded, opt.pretrained_weights);
  if (r.skipped_heads.empty()) return;
  std::string names;
  for (const auto& n : r.skipped_heads) names += (names.empty() ? "" : ", ") + n;
  spdlog::info("pretrained weights: segmentation heads left as initialised ({}): {}",
               r.same_labels ? "their shapes differ" : "the labels differ", names);
}

void Trainer::State::load_pretrained_encoder() {
  const PretrainedEncoder& enc = *opt.pretrained_encoder;
  const auto& patch = in.plans.configuration(in.configuration).patch_size;
  const auto r =
      training::load_pretrained_encoder(*net, enc, std::vector<int64_t>(patch.begin(), patch.end()), cfg.encoder_fit);
  if (cfg.encoder_fit == EncoderFit::Dynamic)
    spdlog::info(
        "pretrained encoder, fitted dynamically: {} kernels averaged, {} pretrained tensors left out, {} of "
        "the network's kept as initialised",
        r.kernels_averaged, r.left_out, r.kept_initialised);
  spdlog::info("pretrained encoder: {} tensors of {}'s stem and encoder from {}{}{}; decoder and head as initialised",
               r.loaded, enc.architecture.empty() ? std::string("the network") : enc.architecture, enc.source,
               r.channels_repeated ? ", its one-channel stem spread over the input channels" : "",
               r.position_embedding_resized ? ", its position embedding resized to the patch" : "");
  if (enc.citations.is_array() && !enc.citations.empty())
    spdlog::info("pretrained encoder: please cite the papers behind these weights: {}", enc.citations.dump());
}

void Trainer::State::save(const char* name) {
  if (!dp->writer()) return;
  const auto t0 = Clock::now();
  save_checkpoint(path(name), to_checkpoint());
  spdlog::debug("wrote {} in {:.2f}s", name, std::chrono::duration<double>(Clock::now() - t0).count());
}

void Trainer::State::start_loaders() {
  data::LoaderOptions lo;
  lo.num_workers = cfg.num_workers;
  lo.batches_per_epoch = cfg.iterations_per_epoch;
  lo.pin_memory = cuda;
  lo.worker_nice = cuda ? 0 : 5;  // on the CPU the network's threads and the workers share the cores
  train_loader =
      std::make_unique<data::DataLoader>(train_src, train_pipe, lo, data::LoaderState{cfg.seed, epoch, next_iter});
  if (cfg.val_iterations_per_epoch > 0) {
    lo.batches_per_epoch = cfg.val_iterations_per_epoch;
    lo.num_workers = std::max(1, cfg.num_workers / 2);
    val_loader = std::make_unique<data::DataLoader>(val_src, val_pipe, lo, data::LoaderState{cfg.seed + 1, epoch, 0});
  }
}

// The batch's targets on the device, with the dataset's ignore label left out of loss and Dice;
// for a region-based dataset one channel per region (+ the ignore mask).
std::vector<at::Tensor> Trainer::State::device_targets(const data::Batch& b) const {
  std::vector<at::Tensor> targets;
  for (const auto& t : b.target) {
    at::Tensor d = ignore_label_as_padding(t.to(device, /*non_blocking=*/true), in.ignore_label);
    if (!in.regions.empty()) d = data::region_targets(d, in.regions, in.ignore_label.has_value());
    targets.push_back(dp->slab(d));
  }
  return targets;
}

bool Trainer::State::train_epoch() {
  net->train();
  set_learning_rate(*optimizer, scheduled_lr(cfg.lr_schedule, cfg.optimizer.lr, epoch, cfg.num_epochs,
                                             cfg.poly_exponent, cfg.warmup_epochs));
  ProgressBar bar(concat("epoch ", epoch), cfg.iterations_per_epoch, opt.progress_bar && dp->writer());
  bar.tick(next_iter);
  for (; next_iter < cfg.iterations_per_epoch; ++next_iter) {
    if (dp->agree_to_stop(interrupt_requested())) return false;
    data::Batch b = train_loader->next();
    if (b.device_input) b = data::augment::augment_batch_on_device(std::move(b), train_pipe, *augment_device);
    const at::Tensor x = dp->slab(b.data.to(device, /*non_blocking=*/true));
    const std::vector<at::Tensor> targets = device_targets(b);
    // Gradients dropped, not zeroed: the same on 1.13 (whose Optimizer::zero_grad keeps zeros) and
    // 2.x, and 4 bytes per parameter less between steps, as the planner's memory model assumes.
    net->zero_grad(/*set_to_none=*/true);
    dp->before_forward();
    at::Tensor loss;
    {
      AutocastGuard autocast(cuda, amp_on, amp_dtype);
      const auto outputs = net->forward(x);
      loss = deep_supervision_loss(outputs, targets, ds_weights, loss_opts);
    }
    // This rank's share of the batch-mean loss (training/data_parallel.h); 1 on one process.
    dp->backward(scaler.scale(dp->active() ? loss * dp->loss_weight() : loss));
    scaler.unscale(*optimizer);
    clip_gradients(params, cfg.grad_clip);
    scaler.step(*optimizer);
    scaler.update();
    loss_sum += dp->batch_mean(loss.item<double>());
    bar.set_postfix("loss " + std::to_string(loss_sum / static_cast<double>(next_iter + 1)).substr(0, 7));
    bar.tick();
  }
  bar.finish();
  return true;
}

void Trainer::State::validate_epoch(EpochMetrics& m) {
  if (!val_loader) return;
  net->eval();
  torch::NoGradGuard no_grad;
  DiceCounts counts;
  double vloss = 0;
  for (int64_t i = 0; i < cfg.val_iterations_per_epoch; ++i) {
    data::Batch b = val_loader->next();
    const at::Tensor x = dp->slab(b.data.to(device, true));
    const std::vector<at::Tensor> targets = device_targets(b);
    AutocastGuard autocast(cuda, amp_on, amp_dtype);
    const auto outputs = net->forward(x);
    vloss += dp->batch_mean(deep_supervision_loss(outputs, targets, ds_weights, loss_opts).item<double>());
    counts += in.regions.empty()
                  ? global_dice_counts(outputs[0].to(at::kFloat), targets[0])
                  : region_dice_counts(outputs[0].to(at::kFloat), targets[0], in.ignore_label.has_value());
  }
  counts = dp->sum(counts);
  m.val_loss = vloss / static_cast<double>(cfg.val_iterations_per_epoch);
  m.pseudo_dice = counts.dice();
  m.mean_fg_dice = nanmean(m.pseudo_dice);
  if (!std::isnan(m.mean_fg_dice)) ema = update_ema(ema, m.mean_fg_dice, cfg.ema_momentum);
  m.ema_pseudo_dice = ema ? *ema : std::nan("");
}

void Trainer::State::end_epoch(EpochMetrics& m, double seconds) {
  m.epoch = epoch;
  m.train_loss = loss_sum / static_cast<double>(cfg.iterations_per_epoch);
  m.lr = learning_rate(*optimizer);
  m.epoch_time = seconds;
  std::string dice;
  for (double d : m.pseudo_dice)
    dice += (dice.empty() ? "" : ", ") + (std::isnan(d) ? std::string("nan") : std::to_string(d).substr(0, 6));
  spdlog::info("epoch {}: train_loss {:.4f}  val_loss {:.4f}  pseudo Dice [{}]  EMA {:.4f}  lr {:.2e}  {:.1f}s", epoch,
               m.train_loss, m.val_loss, dice, m.ema_pseudo_dice, m.lr, m.epoch_time);
  log.push_back(m);
  if (dp->writer()) {
    append_metrics(metrics_path(), m);
    write_progress_plot(path("progress.png"), log);
  }
  ++epoch;
  next_iter = 0;
  loss_sum = 0;
  if (ema && *ema > best_ema) {
    best_ema = *ema;
    spdlog::info("new best EMA pseudo Dice: {:.4f}", best_ema);
    save(kCheckpointBest);
  }
  if (epoch % cfg.checkpoint_every == 0 && epoch < cfg.num_epochs) save(kCheckpointLatest);
}

TrainOutcome Trainer::run() {
  State& s = *s_;
  // Checked before anything is written: a refused command leaves the folder as it found it.
  ResumePoint from;
  distributed::agree(s.dp->group(), "checking the fold folder", [&] {
    if (s.opt.resume)
      from = s.newest_valid_checkpoint();
    else
      refuse_used_fold_folder(s.in.folders.fold_folder);
    if (!s.opt.pretrained_weights.empty() || s.opt.pretrained_encoder) s.load_pretrained();
  });
  if (s.dp->writer()) s.open_run_folder();
  const ScopedInterruptHandler interrupt_handler;
  if (s.opt.resume) s.resume_from(from);
  s.dp->check_same("resume point (epoch, iteration)", std::to_string(s.epoch) + "/" + std::to_string(s.next_iter));
  s.dp->synchronise(*s.net, s.params);
  if (s.epoch >= s.cfg.num_epochs) {
    spdlog::info("training already finished ({} epochs); nothing to do", s.epoch);
    return TrainOutcome::Finished;
  }
  s.start_loaders();
  while (s.epoch < s.cfg.num_epochs) {
    const auto t0 = Clock::now();
    if (!s.train_epoch()) {
      if (s.dp->writer())  // the ranks stopped together; one of them saves
        spdlog::warn("interrupted at epoch {}, iteration {}: saving {}", s.epoch, s.next_iter, kCheckpointLatest);
      s.save(kCheckpointLatest);
      return TrainOutcome::Interrupted;
    }
    EpochMetrics m;
    s.validate_epoch(m);
    s.end_epoch(m, std::chrono::duration<double>(Clock::now() - t0).count());
    if (s.opt.on_epoch && !s.opt.on_epoch(m) && s.epoch < s.cfg.num_epochs) {
      if (s.dp->writer()) spdlog::warn("stopped by the caller after epoch {}: saving {}", m.epoch, kCheckpointLatest);
      s.save(kCheckpointLatest);
      return TrainOutcome::Interrupted;
    }
  }
  s.train_loader.reset();
  s.val_loader.reset();
  s.save(kCheckpointFinal);
  if (s.dp->writer()) {
    std::error_code ec;
    fs::remove(s.path(kCheckpointLatest), ec);
  }
  spdlog::info("training finished: {}", s.path(kCheckpointFinal));
  s.net->set_spatial_shard(std::nullopt);  // final validation: whole cases, split between the ranks
  run_final_validation(*s.net, s.in, s.device, s.mirror_axes, s.opt.save_probabilities, s.dp.get());
  return TrainOutcome::Finished;
}

}  // namespace medseg::training

namespace medseg::training {

double Trainer::validate(const std::string& checkpoint_name) {
  State& s = *s_;
  const std::string file = s.path(checkpoint_name.c_str());
  MEDSEG_CHECK_FILE(fs::exists(file), file, "checkpoint not found (has this fold finished training?)");
  const Checkpoint ck = load_checkpoint(file);
  load_weights(*s.net, ck.weights, true);
  s.dp->check_same("weights of " + checkpoint_name, weights_digest(*s.net));
  if (s.dp->writer()) s.open_run_folder();
  s.net->set_spatial_shard(std::nullopt);
  return run_final_validation(*s.net, s.in, s.device, s.mirror_axes, s.opt.save_probabilities, s.dp.get());
}

}  // namespace medseg::training
