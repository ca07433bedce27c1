#include "training/pretrained_encoder.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <map>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "plans/nnssl_adaptation_plan.h"

namespace medseg::training {

namespace {

using json = nlohmann::json;
using TensorMap = std::map<std::string, at::Tensor>;

// `name` is `prefix` or lies under it; `rest` is what follows (with its dot).
bool under(const std::string& name, const std::string& prefix, std::string* rest) {
  if (prefix.empty() || name.compare(0, prefix.size(), prefix) != 0) return false;
  if (name.size() != prefix.size() && name[prefix.size()] != '.') return false;
  *rest = name.substr(prefix.size());
  return true;
}

std::string sizes_text(const at::Tensor& t) { return c10::str(t.sizes()); }

}  // namespace

PretrainedEncoder pretrained_encoder_from_nnssl(std::vector<std::pair<std::string, at::Tensor>> weights,
                                                const json& adaptation_plan, json citations,
                                                const std::string& source) {
  const planning::NnsslAdaptationPlan plan = planning::nnssl_adaptation_plan_from_json(adaptation_plan, source);
  PretrainedEncoder e;
  e.weights = std::move(weights);
  e.source = source;
  e.citations = std::move(citations);
  e.key_to_encoder = plan.key_to_encoder;
  e.key_to_stem = plan.key_to_stem;
  e.key_to_lpe = plan.key_to_lpe.value_or("");
  e.keys_to_in_proj = plan.keys_to_in_proj;
  e.in_channels = plan.pretrain_num_input_channels;
  e.patch_size = plan.patch_size();
  e.recommended_patch_size = plan.recommended_patch_size;
  e.architecture = plan.arch_class_name;
  return e;
}

namespace {

// The pretrained stem and encoder under the network's names (the stem first: a PlainConvUNet's stem is its
// encoder's first stage). A class token (not in medseg's networks) is left out, as nnU-Net filters it.
TensorMap renamed(const PretrainedEncoder& enc, const models::SegmentationNetworkImpl::EncoderKeys& keys) {
  TensorMap out;
  for (const auto& [name, t] : enc.weights) {
    std::string rest;
    if (name == enc.key_to_encoder + ".cls_token") continue;
    if (under(name, enc.key_to_stem, &rest))
      out[keys.stem + rest] = t;
    else if (under(name, enc.key_to_encoder, &rest))
      out[keys.encoder + rest] = t;
  }
  return out;
}

// A stem pretrained on one channel, spread over `channels` (pretrainedTrainer.py: repeat, then divide).
bool adapt_channels(TensorMap& from, const TensorMap& target, const PretrainedEncoder& enc,
                    const models::SegmentationNetworkImpl::EncoderKeys& keys) {
  const std::string name = keys.in_proj.at(0) + ".weight";
  const auto src = from.find(name);
  const auto dst = target.find(name);
  if (src == from.end() || dst == target.end()) return false;  // reported as missing by the shape check
  const int64_t have = src->second.size(1), want = dst->second.size(1);
  if (have == want) return false;
  MEDSEG_CHECK_FILE(have == 1, enc.source, "the stem was pretrained on ", have, " input channels and the network has ",
                    want, ": only a one-channel stem is spread over several channels (as nnU-Net's PretrainedTrainer)");
  std::vector<int64_t> reps(static_cast<std::size_t>(src->second.dim()), 1);
  reps[1] = want;
  src->second = src->second.repeat(reps) / static_cast<double>(want);
  return true;
}

// The position embedding of the pretraining patch resized to the network's (load_weights_utils.py,
// interpolate_patch_embed_3d: tokens in x-y-z order as a 3D grid, trilinear, align_corners false).
bool resize_position_embedding(TensorMap& from, const TensorMap& target, const PretrainedEncoder& enc,
                               const models::SegmentationNetworkImpl::EncoderKeys& keys,
                               const std::vector<int64_t>& patch_size) {
  if (keys.lpe.empty() || !from.count(keys.lpe) || !target.count(keys.lpe)) return false;
  at::Tensor pos = from.at(keys.lpe);
  const at::Tensor& want = target.at(keys.lpe);
  const bool cls = std::any_of(enc.weights.begin(), enc.weights.end(),
                               [&](const auto& kv) { return kv.first == enc.key_to_encoder + ".cls_token"; });
  if (cls && pos.dim() == 3 && pos.size(1) > 1) {  // the class token's position goes with it (handle_pos_embed_resize)
    pos = pos.slice(1, 1);
    from[keys.lpe] = pos;
  }
  if (pos.sizes() == want.sizes()) return false;
  const auto proj = from.find(keys.stem + ".proj.weight");
  MEDSEG_CHECK_FILE(proj != from.end() && proj->second.dim() == 5 && pos.dim() == 3, enc.source,
                    "the position embedding ", sizes_text(pos), " differs from the network's ", sizes_text(want),
                    " and the stem has no single patch-embedding convolution to tell its token grid by");
  std::vector<int64_t> grid_from, grid_to;
  for (std::size_t i = 0; i < 3; ++i) {
    const int64_t k = proj->second.size(static_cast<int64_t>(i) + 2);
    grid_from.push_back(enc.patch_size.at(i) / k);
    grid_to.push_back(patch_size.at(i) / k);
  }
  const int64_t n_from = grid_from[0] * grid_from[1] * grid_from[2], n_to = grid_to[0] * grid_to[1] * grid_to[2];
  MEDSEG_CHECK_FILE(pos.size(1) == n_from && want.size(1) == n_to && pos.size(2) == want.size(2), enc.source,
                    "the position embedding ", sizes_text(pos), " does not fit the pretraining patch ",
                    c10::str(enc.patch_size), " (", n_from, " tokens), or the network's ", sizes_text(want),
                    " its patch (", n_to, " tokens; register tokens are not resized)");
  const int64_t d = pos.size(2);
  at::Tensor grid = pos.permute({0, 2, 1}).reshape({1, d, grid_from[0], grid_from[1], grid_from[2]});
  grid = at::upsample_trilinear3d(grid.to(at::kFloat), grid_to, /*align_corners=*/false);
  from[keys.lpe] = grid.reshape({1, d, n_to}).permute({0, 2, 1}).contiguous().to(pos.scalar_type());
  return true;
}

// A convolution's pretrained kernel averaged along the axes where the network's is 1 (adapt_conv_kernel_size); an
// undefined tensor where other sizes differ.
at::Tensor averaged_kernel(const at::Tensor& from, const at::Tensor& to) {
  if (from.dim() != to.dim() || from.dim() < 4 || from.size(0) != to.size(0) || from.size(1) != to.size(1)) return {};
  at::Tensor t = from;
  for (int64_t d = 2; d < from.dim(); ++d) {
    if (from.size(d) == to.size(d)) continue;
    if (to.size(d) != 1) return {};
    t = t.mean(d, /*keepdim=*/true);
  }
  return t;
}

// DynamicPretrainedTrainer's fit: each pretrained tensor the network has, as it is or with its kernel averaged;
// the others left out.
void fit_dynamically(TensorMap& from, const TensorMap& target, EncoderLoadReport& report) {
  for (auto it = from.begin(); it != from.end();) {
    const auto to = target.find(it->first);
    if (to != target.end() && it->second.sizes() == to->second.sizes()) {
      ++it;
      continue;
    }
    const bool is_weight = it->first.size() > 7 && it->first.compare(it->first.size() - 7, 7, ".weight") == 0;
    const at::Tensor averaged =
        to == target.end() || !is_weight ? at::Tensor() : averaged_kernel(it->second, to->second);
    if (averaged.defined()) {
      it->second = averaged;
      ++report.kernels_averaged;
      ++it;
    } else {
      ++report.left_out;
      it = from.erase(it);
    }
  }
}

// Strict: every tensor of the network's stem and encoder comes from the file with its shape, and nothing else does
// (nnU-Net loads both modules strictly). Dynamic: counts the network's tensors the file does not give.
void check_fit(const TensorMap& from, const TensorMap& target, const PretrainedEncoder& enc,
               const models::SegmentationNetworkImpl& net, EncoderFit fit, EncoderLoadReport& report) {
  const auto keys = net.encoder_keys();
  for (const auto& [name, t] : target) {
    std::string rest;
    if (!under(name, keys.stem, &rest) && !under(name, keys.encoder, &rest)) continue;
    const auto it = from.find(name);
    if (fit == EncoderFit::Dynamic) {
      report.kept_initialised += it == from.end();
      continue;
    }
    MEDSEG_CHECK_FILE(it != from.end(), enc.source, "has no pretrained tensor for the network's '", name,
                      "' (the pretrained ", enc.architecture, " is another architecture than ", net.class_name(),
                      ", or another depth)");
    MEDSEG_CHECK_FILE(it->second.sizes() == t.sizes(), enc.source, "pretrained tensor for '", name, "' has shape ",
                      sizes_text(it->second), ", the network's is ", sizes_text(t), " (another architecture or width)");
  }
  for (const auto& kv : from)
    MEDSEG_CHECK_FILE(target.count(kv.first), enc.source, "pretrained tensor '", kv.first,
                      "' has no place in the network's stem or encoder (another architecture or depth)");
  MEDSEG_CHECK_FILE(!from.empty(), enc.source, "has no tensor that fits the network's stem or encoder (the pretrained ",
                    enc.architecture, " and ", net.class_name(), " share nothing)");
}

}  // namespace

EncoderLoadReport load_pretrained_encoder(models::SegmentationNetworkImpl& net, const PretrainedEncoder& enc,
                                          const std::vector<int64_t>& patch_size, EncoderFit fit) {
  const auto keys = net.encoder_keys();
  MEDSEG_CHECK_FILE(!keys.encoder.empty(), enc.source, "holds a pretrained encoder, and ", net.class_name(),
                    " has none to take it (fine-tuning from nnssl takes U-Nets and Primus)");
  const auto named = checkpoint::module_weights(net);
  const TensorMap target(named.begin(), named.end());
  TensorMap from = renamed(enc, keys);
  EncoderLoadReport report;
  report.channels_repeated = adapt_channels(from, target, enc, keys);
  report.position_embedding_resized = resize_position_embedding(from, target, enc, keys, patch_size);
  if (fit == EncoderFit::Dynamic) fit_dynamically(from, target, report);
  check_fit(from, target, enc, net, fit, report);  // in full, before the first copy
  torch::NoGradGuard no_grad;
  for (const auto& [name, t] : from)
    target.at(name).copy_(t.to(target.at(name).device(), target.at(name).scalar_type()));
  report.loaded = static_cast<int64_t>(from.size());
  return report;
}

}  // namespace medseg::training
