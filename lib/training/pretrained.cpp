#include "training/pretrained.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <map>

#include "checkpoint/checkpoint.h"
#include "core/error.h"

namespace medseg::training {

namespace {

std::string shape_of(const at::Tensor& t) { return c10::str(t.sizes()); }

// The heads mean the same when the labels are the same names and values, and, for regions (whose
// outputs follow the order of "labels"), listed in the same order. Plain labels' outputs follow their
// values, so their order in the file does not matter.
bool same_outputs(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) {
  if (nlohmann::json(a) != nlohmann::json(b)) return false;
  const bool regions = std::any_of(a.begin(), a.end(), [](const nlohmann::ordered_json& v) { return v.is_array(); });
  return !regions || a == b;
}

}  // namespace

PretrainedReport load_pretrained_weights(models::SegmentationNetworkImpl& net, const std::string& checkpoint_path,
                                         const nlohmann::ordered_json& labels) {
  const checkpoint::Checkpoint ck = checkpoint::load_checkpoint(checkpoint_path);
  const std::map<std::string, at::Tensor> source(ck.weights.begin(), ck.weights.end());
  const std::string head = net.segmentation_head_prefix();
  const auto target = checkpoint::module_weights(net);
  // Everything is checked before the first copy: a refused file leaves the network as it was.
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;
  PretrainedReport report;
  report.same_labels =
      ck.dataset.is_object() && ck.dataset.contains("labels") && same_outputs(ck.dataset.at("labels"), labels);
  for (const auto& [name, t] : target) {
    const bool is_head = name.compare(0, head.size(), head) == 0;
    const auto it = source.find(name);
    if (it != source.end() && it->second.sizes() == t.sizes() && (!is_head || report.same_labels)) {
      copies.emplace_back(t, it->second);
      continue;
    }
    if (is_head) {
      report.skipped_heads.push_back(name);
      continue;
    }
    MEDSEG_CHECK_FILE(it != source.end(), checkpoint_path, "has no tensor '", name,
                      "', which the network has: pretrained weights must "
                      "come from the same architecture (plans) and input channels");
    throw FileError(checkpoint_path, "tensor '" + name + "' has shape " + shape_of(it->second) + ", the network's is " +
                                         shape_of(t) +
                                         ": pretrained weights must come from the same architecture "
                                         "(plans) and input channels");
  }
  torch::NoGradGuard no_grad;
  for (auto& [to, from] : copies) to.copy_(from.to(to.device(), to.scalar_type()));
  report.loaded = static_cast<int64_t>(copies.size());
  return report;
}

}  // namespace medseg::training
