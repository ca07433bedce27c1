#pragma once
// nnssl's adaptation plan (AdaptationPlan.serialize(), stored in every nnssl checkpoint as
// "nnssl_adaptation_plan"): what fine-tuning needs to know of the pretraining. One reader, for the plans made from a
// checkpoint (planning/plans_like_nnssl.h, their pretrain_info) and for loading its encoder
// (training/pretrained_encoder.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.h"

namespace medseg::planning {

struct NnsslAdaptationPlan {
  // Where the pretraining network keeps its encoder, stem, input projections and learnable position embedding.
  std::string key_to_encoder, key_to_stem;
  std::vector<std::string> keys_to_in_proj;
  std::optional<std::string> key_to_lpe;
  int64_t pretrain_num_input_channels = 1;
  std::vector<int64_t> pretrain_config_patch_size;          // the pretrain plan's (first) configuration's patch_size
  std::optional<std::vector<int64_t>> pretrain_patch_size;  // the plan's own pretrain_patch_size, when set
  std::optional<std::vector<double>> pretrain_spacing;      // the pretrain configuration's spacing; none: not resampled
  std::vector<int64_t> recommended_patch_size;              // recommended_downstream_patchsize; empty when absent
  // architecture_plans: arch_class_name, and arch_kwargs / arch_kwargs_requiring_import as given (null for presets).
  std::string arch_class_name;
  json arch_kwargs, arch_kwargs_requiring_import;

  // The patch the encoder was pretrained on: pretrain_patch_size when set (nnU-Net reads that first), else the
  // pretrain configuration's.
  const std::vector<int64_t>& patch_size() const {
    return pretrain_patch_size ? *pretrain_patch_size : pretrain_config_patch_size;
  }
};

// Reads nnssl_adaptation_plan. Throws FileError(source, ...) naming a missing or mistyped key: the keys and their
// strings, a positive channel count, patch sizes of 3 values in 1..4096, a spacing of 3 positive values or null.
NnsslAdaptationPlan nnssl_adaptation_plan_from_json(const json& plan, const std::string& source);

}  // namespace medseg::planning
