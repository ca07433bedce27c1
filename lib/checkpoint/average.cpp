#include "checkpoint/average.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>

#include "checkpoint/checkpoint.h"
#include "checkpoint/container.h"
#include "core/error.h"
#include "core/path_overlap.h"

namespace medseg::checkpoint {

void average_checkpoints(const std::vector<std::string>& inputs, const std::string& output) {
  MEDSEG_CHECK(inputs.size() >= 2, "average: need at least two checkpoints");
  for (const std::string& in : inputs) check_output_apart(output, in, "input checkpoint");  // it would be replaced
  TensorArchive base = read_archive(inputs[0]);
  std::vector<std::map<std::string, at::Tensor>> others;
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const TensorArchive a = read_archive(inputs[i]);
    others.emplace_back(a.tensors.begin(), a.tensors.end());
  }
  const std::string prefix = kWeightsPrefix;
  // Means are computed from the original values first and written afterwards, so keys that are
  // (possibly overlapping) views of one storage all see unmodified inputs.
  std::vector<std::pair<at::Tensor, at::Tensor>> updates;
  for (const auto& [name, t] : base.tensors) {
    if (name.compare(0, prefix.size(), prefix) != 0 || !at::isFloatingType(t.scalar_type())) continue;
    at::Tensor sum = t.to(at::kDouble);
    for (std::size_t i = 0; i < others.size(); ++i) {
      const auto it = others[i].find(name);
      MEDSEG_CHECK_FILE(it != others[i].end(), inputs[i + 1], "has no tensor '", name, "'");
      MEDSEG_CHECK_FILE(it->second.sizes() == t.sizes(), inputs[i + 1], "tensor '", name, "' has shape ",
                        c10::str(it->second.sizes()), ", ", inputs[0], " has ", c10::str(t.sizes()));
      sum = sum + it->second.to(at::kDouble);
    }
    updates.emplace_back(t, (sum / static_cast<double>(inputs.size())).to(t.scalar_type()));
  }
  for (std::size_t i = 0; i < others.size(); ++i)
    for (const auto& entry : others[i]) {
      // Not a structured binding: C++17 lambdas cannot capture one (clang refuses, gcc allows).
      const std::string& name = entry.first;
      MEDSEG_CHECK_FILE(
          name.compare(0, prefix.size(), prefix) != 0 ||
              !std::none_of(base.tensors.begin(), base.tensors.end(), [&](const auto& b) { return b.first == name; }),
          inputs[i + 1], "has tensor '", name, "', which ", inputs[0], " lacks");
    }
  for (auto& [target, mean] : updates) target.copy_(mean);
  // Training state of the first input would make the average look resumable: drop all of it.
  base.tensors.erase(std::remove_if(base.tensors.begin(), base.tensors.end(),
                                    [&](const auto& t) { return t.first.compare(0, prefix.size(), prefix) != 0; }),
                     base.tensors.end());
  base.meta["optimizer"] = {{"type", ""}, {"groups", nlohmann::json::array()}, {"scalars", nlohmann::json::object()}};
  base.meta["grad_scaler"] = nlohmann::json::object();
  base.meta["rng"] = {{"cuda_devices", 0}, {"workers", 0}};
  base.meta["sampler"] = nlohmann::json::object();
  base.meta["logs"] = nlohmann::json::array();
  base.meta["ema"] = nullptr;
  base.meta["weights_only"] = true;
  base.meta["averaged_from"] = inputs;
  write_archive(output, base);
}

}  // namespace medseg::checkpoint
