#pragma once
// Fine-tuning: nnU-Net's -pretrained_weights. A fresh network takes every tensor of another run's
// checkpoint except the segmentation heads when the labels differ (their outputs mean other
// things, or there are another number of them); anything else that does not match means another
// architecture and is refused.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/network.h"

namespace medseg::training {

struct PretrainedReport {
  int64_t loaded = 0;                      // tensors copied (aliases counted once per name)
  std::vector<std::string> skipped_heads;  // segmentation-head tensors left as initialised
  bool same_labels = false;                // the checkpoint's dataset.json labels equal `labels`
};

// Copies the weights of `checkpoint_path` (a medseg checkpoint: training, final or averaged) into
// `net`, whose dataset.json has `labels`. Throws FileError naming the file and the first tensor
// that is missing or has another shape outside the segmentation heads; `net` is unchanged then.
PretrainedReport load_pretrained_weights(models::SegmentationNetworkImpl& net, const std::string& checkpoint_path,
                                         const nlohmann::ordered_json& labels);

}  // namespace medseg::training
