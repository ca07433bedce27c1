#pragma once
// nnssl's self-supervised checkpoints, read without Python: the file AbstractTrainer.save_checkpoint writes
// (torch.save of a dict with "network_weights" and "nnssl_adaptation_plan", AdaptationPlan.serialize()), which
// nnU-Net's PretrainedTrainer fine-tunes from (documentation/finetuning_from_nnssl_checkpoints.md).
// Only data is read (sharing/torch_pickle.h); optimizer state and logs are ignored.
#include <ATen/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace medseg::sharing {

struct NnsslCheckpoint {
  // network_weights in medseg's names (nnU-Net's aliases dropped, sharing/nnunet_weights.h).
  std::vector<std::pair<std::string, at::Tensor>> weights;
  nlohmann::json adaptation_plan;                      // nnssl_adaptation_plan, as JSON
  nlohmann::json citations = nlohmann::json::array();  // the checkpoint's "citations", when it has them
};

// Whether `path` starts as a zip archive does, as torch.save's files (nnssl's and nnU-Net's .pth) do and
// medseg's checkpoints do not. False for a file that cannot be read.
bool is_torch_save_file(const std::string& path);

// Reads an nnssl checkpoint. Throws FileError naming the file when it is not a torch archive, has no
// network_weights or nnssl_adaptation_plan, or holds values JSON cannot (nesting deeper than 64, a cycle,
// non-finite numbers, tensors in the plan).
NnsslCheckpoint read_nnssl_checkpoint(const std::string& path);

}  // namespace medseg::sharing
