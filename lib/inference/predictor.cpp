#include "inference/predictor.h"

#include <ATen/Parallel.h>
#include <algorithm>
#include <cstdlib>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>

#include "checkpoint/checkpoint.h"
#include "core_torch/autocast.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/log.h"
#include "core_torch/torch_memory.h"
#include "io/label_check.h"
#include "preprocessing/one_hot.h"
#include "inference/sharded_window.h"
#include "inference/slab_export.h"
#include "core/system_memory.h"
#include "core/torch_compat.h"
#include "planning/memory_check.h"
#include "models/network.h"
#include "models/onednn_conv.h"

namespace medseg::inference {

struct Predictor::Nets {
  std::vector<models::SegmentationNetwork> nets;
};

AmpMode prediction_amp(AmpMode requested, bool cuda, bool exact_nnunet, const CpuFeatures& cpu) {
  if (requested != AmpMode::Auto) return requested;
  if (cuda) return AmpMode::Fp16;
  return cpu.bf16_units() && !exact_nnunet ? AmpMode::Bf16 : AmpMode::Off;
}

int64_t auto_tile_batch(bool cuda, const std::vector<int>& patch_size) {
  constexpr int64_t kMaxBatch = 8, kCpuPassVoxels = int64_t{1} << 20;
  if (cuda) return kMaxBatch;
  int64_t voxels = 1;
  for (int s : patch_size) voxels *= std::max(1, s);
  return std::clamp<int64_t>(kCpuPassVoxels / voxels, 1, kMaxBatch);
}

namespace {
// Channels-last pays on the CPU in bf16 (oneDNN's channels-last convolutions: 1.3-1.6x faster on the U-Nets'
// larger layers, measured in docs/predict.md, "Channels-last in bf16"). fp32 keeps nnU-Net's layout: --amp off
// and --exact_nnunet are held to nnU-Net's numbers. MEDSEG_CHANNELS_LAST=0 turns it off (for comparisons).
bool runs_channels_last(const std::vector<models::SegmentationNetwork>& nets, bool cuda, bool bf16, bool exact) {
  const char* env = std::getenv("MEDSEG_CHANNELS_LAST");
  if (cuda || !bf16 || exact || (env != nullptr && std::string(env) == "0")) return false;
  return std::all_of(nets.begin(), nets.end(), [](const auto& n) { return n->supports_channels_last(); });
}

// The network's 5-D weights in channels-last, the layout its convolutions then take without a reorder.
void to_channels_last(torch::nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& p : net.parameters())
    if (p.dim() == 5) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast3d));
}

// The folds' networks with their weights (each fold's weights handed over: the network holds them), in eval
// mode on `device`, without deep supervision.
std::vector<models::SegmentationNetwork> load_networks(ModelFolder& model, const planning::ConfigurationPlan& cfg,
                                                       bool exact_nnunet, const c10::Device& device) {
  models::NetworkBuildOptions bo;
  bo.deep_supervision = false;
  bo.inplace = true;
  bo.init_weights = false;
  std::vector<models::SegmentationNetwork> nets;
  for (FoldWeights& f : model.folds) {
    models::SegmentationNetwork net =
        models::build_network_from_plan(cfg.architecture, model.in_channels, model.num_classes, bo);
    try {
      checkpoint::load_weights(*net, f.weights, /*strict=*/true);
    } catch (const std::exception& e) {
      throw FileError(f.path, "weights do not fit the plans' network: " + one_line(e.what()));
    }
    f.weights.clear();
    net->set_deep_supervision(false);
    if (exact_nnunet) models::use_torch_conv_dispatch(*net, true);
    net->eval();
    net->to(device);
    nets.push_back(net);
  }
  return nets;
}
}  // namespace

Predictor::Predictor(ModelFolder model, const PredictorOptions& opts)
    : torch_settings_(std::make_unique<ScopedTorchSettings>(TorchSettings{opts.torch_threads, false, false, {}})),
      model_(std::move(model)),
      opts_(opts),
      nets_(std::make_unique<Nets>()) {
  const planning::ConfigurationPlan& cfg = model_.plans.configuration(model_.configuration);
  if (!cfg.previous_stage.empty()) {
    previous_stage_labels_ = io::foreground_labels(model_.dataset.labels);  // load_model_folder checked the count
  }
  plan_ = preprocessing::make_preprocess_plan(model_.plans, model_.configuration, model_.dataset);
  labels_ = label_mapping(model_.dataset, model_.folder + "/dataset.json");
  export_.resample = probabilities_resampling(cfg);

  const c10::Device device(opts_.device);
  cuda_ = device.is_cuda();
  MEDSEG_CHECK(!cuda_ || torch::cuda::is_available(), "-device ", opts_.device,
               ": CUDA is not available in this build/machine");
  const AmpMode amp_mode = prediction_amp(opts_.amp, cuda_, opts_.exact_nnunet, cpu_features());
  const AutocastSetting amp = autocast_setting(amp_mode, cuda_);
  autocast_ = amp.enabled;
  autocast_dtype_ = amp.dtype;
  if (!cuda_ && opts_.amp == AmpMode::Auto && amp.enabled)
    spdlog::info(
        "--amp auto: the network runs in bf16 on this CPU's bf16 units ({}); --amp off for nnU-Net's fp32 "
        "arithmetic (docs/predict.md, \"bf16 on the CPU\")",
        cpu_features().describe());

  window_.patch_size.assign(cfg.patch_size.begin(), cfg.patch_size.end());
  window_.step_size = opts_.step_size;
  window_.use_gaussian = true;
  if (opts_.mirroring) window_.mirror_axes = model_.mirror_axes;
  MEDSEG_CHECK(opts_.tile_batch >= 0, "--tile_batch must be 0 (auto) or more, got ", opts_.tile_batch);
  window_.max_batch = opts_.exact_nnunet      ? 1
                      : opts_.tile_batch == 0 ? auto_tile_batch(cuda_, cfg.patch_size)
                                              : opts_.tile_batch;
  window_.device = device;
  window_.half_accumulators = opts_.half_accumulators || opts_.exact_nnunet;
  export_.half_logits = window_.half_accumulators;  // fp16 sums make fp16 logits
  window_.progress = opts_.progress;

  // Refuse a plan that cannot fit before a weight or tile is allocated (planning/memory_check.h). One
  // tile is the least any prediction needs, so a run that could work is never refused.
  planning::check_forward_fits(cfg.architecture, cfg.patch_size, 1, static_cast<int>(model_.in_channels),
                               device_memory_limit(opts_.device), model_.plans.source,
                               "configuration '" + model_.configuration + "'");
  nets_->nets = load_networks(model_, cfg, opts_.exact_nnunet, device);
  channels_last_ =
      runs_channels_last(nets_->nets, cuda_, autocast_ && autocast_dtype_ == at::kBFloat16, opts_.exact_nnunet);
  if (channels_last_)
    for (auto& net : nets_->nets) to_channels_last(*net);
}

Predictor::~Predictor() = default;

int64_t Predictor::image_channels() const {
  return model_.in_channels - static_cast<int64_t>(previous_stage_labels_.size());
}

preprocessing::PreprocessedCaseData Predictor::preprocess(io::LoadedCase c, const std::string& previous_stage) const {
  MEDSEG_CHECK(static_cast<int64_t>(c.channels.size()) == image_channels(), "case '", c.id, "' has ", c.channels.size(),
               " channel(s), the model expects ", image_channels());
  if (!is_cascade()) {
    c.label = Volume();  // a plain model takes no segmentation
    return preprocessing::preprocess_case(std::move(c), plan_);
  }
  MEDSEG_CHECK(c.label.numel() != 0, "case '", c.id, "': configuration '", model_.configuration,
               "' is a cascade stage and needs the '", model_.plans.configuration(model_.configuration).previous_stage,
               "' prediction of the case (-prev_stage_predictions FOLDER, or both model folders)");
  std::vector<int> allowed{0};
  allowed.insert(allowed.end(), previous_stage_labels_.begin(), previous_stage_labels_.end());
  io::check_label_values(c.label, allowed, previous_stage, c.id);
  preprocessing::PreprocessedCaseData p = preprocessing::preprocess_case(std::move(c), plan_);
  // nnU-Net's predictor: the previous stage's segmentation, preprocessed like a reference, becomes
  // one-hot channels after the image's (-1 outside the nonzero mask counts as no label).
  auto& a = p.arrays;
  const int64_t n = a.shape[0] * a.shape[1] * a.shape[2];
  const auto K = static_cast<int64_t>(previous_stage_labels_.size());
  a.data.resize(static_cast<size_t>((a.channels + K) * n), 0.f);
  preprocessing::one_hot(a.seg.data(), n, previous_stage_labels_, a.data.data() + a.channels * n);
  a.channels += static_cast<int>(K);
  return p;
}

namespace {
// `nets` as one network: their float logits averaged, each forward under the autocast setting.
NetworkFn averaged(std::vector<models::SegmentationNetwork> nets, bool cuda, bool on, c10::ScalarType dtype,
                   bool channels_last) {
  return [nets = std::move(nets), cuda, on, dtype, channels_last](const at::Tensor& x) {
    AutocastGuard ac(cuda, on, dtype);
    const at::Tensor in = channels_last ? x.contiguous(at::MemoryFormat::ChannelsLast3d) : x;
    at::Tensor sum;
    for (auto net : nets) {  // a copy of the holder: forward is not const
      // float and contiguous in one copy (a channels-last bf16 output would otherwise be copied twice)
      at::Tensor y = net->forward(in).at(0).to(at::kFloat, false, false, at::MemoryFormat::Contiguous);
      sum = sum.defined() ? sum.add_(y) : y;
    }
    return nets.size() > 1 ? sum.div_(static_cast<double>(nets.size())) : sum;
  };
}
}  // namespace

NetworkFn Predictor::network_fn() const {
  return averaged(nets_->nets, cuda_, autocast_, autocast_dtype_, channels_last_);
}

SlidingWindowOptions Predictor::window_options(bool on_host) const {
  SlidingWindowOptions w = window_;
  w.accumulate_on_host = on_host && cuda_;
  return w;
}

namespace {
// from_blob needs a mutable pointer; the sliding window only reads the image.
at::Tensor image_of(const preprocessing::CaseArrays& a) {
  const auto& s = a.shape;
  return at::from_blob(const_cast<float*>(a.data.data()), {a.channels, s[0], s[1], s[2]}, at::kFloat);
}
}  // namespace

at::Tensor Predictor::predict_logits(const preprocessing::CaseArrays& a, bool on_host) {
  c10::InferenceMode guard;
  const at::Tensor image = image_of(a);
  const NetworkFn fn = network_fn();
  if (opts_.group && opts_.group->size() > 1)
    return predict_sliding_window_sharded(fn, image, model_.num_classes, window_, *opts_.group);
  const SlidingWindowOptions w = window_options(on_host);
  auto& nets = nets_->nets;
  if (!w.half_accumulators || nets.size() == 1) return predict_sliding_window(fn, image, model_.num_classes, w);
  // nnU-Net's fold ensemble with fp16 accumulators: each fold's whole sliding window, the fp16 logits
  // summed fold by fold in fp16 and divided by the count in fp16 (predict_logits_from_preprocessed_data).
  at::Tensor sum;
  for (const auto& net : nets) {
    const NetworkFn one = averaged({net}, cuda_, autocast_, autocast_dtype_, channels_last_);
    const at::Tensor l = predict_sliding_window(one, image, model_.num_classes, w).to(at::kHalf);
    sum = sum.defined() ? sum.add_(l) : l;
  }
  return sum.div_(static_cast<double>(nets.size())).to(at::kFloat);
}

Placement Predictor::placement(const preprocessing::CaseArrays& a, const preprocessing::CaseProperties& props,
                               const ExportOptions& eo) const {
  CaseSize size;
  size.preprocessed = {a.shape[0], a.shape[1], a.shape[2]};
  size.cropped = props.shape_after_cropping_and_before_resampling;
  size.original = props.original_shape;
  size.channels = a.channels;
  size.classes = model_.num_classes;
  size.tile_batch = window_.max_batch;
  const WindowShape w = window_shape(size.preprocessed, window_.patch_size, window_.step_size);
  PlacementRequest r;
  r.cuda = cuda_;
  r.not_on_device = opts_.not_on_device;
  r.mode = opts_.slabs;
  r.slabs_possible = SlabExport::supported(eo) && !(opts_.group && opts_.group->size() > 1);
  const c10::Device device(opts_.device);
  r.device_free = cuda_ ? compat::cuda_free_memory(device.has_index() ? device.index() : 0) : 0;
  r.host_free = available_memory_bytes();
  return decide_placement(
      case_memory(size, w, cuda_ && !opts_.not_on_device, window_.half_accumulators, eo.save_probabilities), r);
}

Volume Predictor::predict_segmentation_in_slabs(const preprocessing::CaseArrays& a,
                                                const preprocessing::CaseProperties& props, const ExportOptions& eo,
                                                bool on_host, std::vector<float>* probabilities) {
  c10::InferenceMode guard;
  const at::Tensor image = image_of(a);
  const NetworkFn fn = network_fn();
  SlidingWindowOptions w = window_options(on_host);
  while (true) {
    const SlidingWindow window(image, model_.num_classes, w);
    SlabExport slabs(props, labels_, eo, window.axis(), probabilities != nullptr);
    try {
      window.stream(fn, [&](int64_t begin, const at::Tensor& logits) { slabs.add(begin, logits); });
    } catch (const NonFiniteLogits& e) {
      if (!w.half_accumulators) throw;
      spdlog::warn("{}; predicting again with float32 accumulators", one_line(e.what()));
      w.half_accumulators = false;
      continue;
    }
    return slabs.finish(probabilities);
  }
}

Predictor::CasePrediction Predictor::predict_case(const preprocessing::CaseArrays& arrays,
                                                  const preprocessing::CaseProperties& props, const ExportOptions& eo,
                                                  const std::string& id) {
  const bool sharded = opts_.group != nullptr;
  Placement place = placement(arrays, props, eo);
  if (place.slabs || (cuda_ && place.on_host)) spdlog::info("case '{}': {}", id, place.why);
  CasePrediction r;
  while (true) {
    try {
      if (!place.slabs)
        r.logits = predict_logits(arrays, place.on_host);
      else
        r.seg = predict_segmentation_in_slabs(arrays, props, eo, place.on_host,
                                              eo.save_probabilities ? &r.probabilities : nullptr);
      return r;
    } catch (const std::exception& e) {
      if (sharded || !is_out_of_memory(e)) throw;
      const Placement before = place;
      if (!next_placement(place, cuda_, opts_.slabs != SlabMode::Never && SlabExport::supported(eo))) throw;
      spdlog::warn("case '{}': out of memory with {} ({}); predicting again in slabs {}", id,
                   before.slabs ? "slabs" : "whole logits", one_line(e.what()),
                   place.on_host ? "in host memory" : "on the GPU");
    }
  }
}

Volume Predictor::segmentation(CasePrediction r, const preprocessing::CaseProperties& props, const ExportOptions& eo,
                               std::vector<float>* probabilities) const {
  if (!r.seg) return logits_to_segmentation(r.logits, props, labels_, eo, probabilities);
  if (probabilities) *probabilities = std::move(r.probabilities);
  return std::move(*r.seg);
}

}  // namespace medseg::inference
