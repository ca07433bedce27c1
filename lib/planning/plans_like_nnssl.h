#pragma once
// nnUNetv2_preprocess_like_nnssl's plans (nnU-Net master, experiment_planning/like_nnssl.py): a dataset's plans
// re-made for fine-tuning from an nnssl checkpoint (docs/finetuning.md). From the base plans' 3d_fullres
// configuration, as nnU-Net makes them:
//   - pretrain_info: the checkpoint, the keys to its encoder, stem, input projection and position embedding, its
//     input channels, pretraining and recommended patch sizes, and its citations;
//   - the spacing by the adaptation mode; every channel z-score normalised; batch size 2;
//   - the checkpoint's architecture and its recommended downstream patch size;
//   - data_identifier "Spacing__X_Y_Z___Norm__Z[_Z...]", plans_name "ptPlans__<name>____<data_identifier>";
//   - 3d_fullres alone.
#include <string>
#include <vector>

#include "planning/planner.h"

namespace medseg::planning {

// -am: which spacing the downstream data is resampled to.
enum class NnsslSpacing {
  LikePretrained,  // the pretraining's (the dataset's own when the pretraining had none): nnU-Net's recommendation
  DefaultNnunet,   // the base plans' (nnUNetv2_preprocess_like_nnssl's default)
  Fixed,           // -os X Y Z
};
// "like_pretrained", "default_nnunet", "fixed"; "no_resample" is refused (medseg's preprocessing resamples every
// case to one spacing); anything else is refused listing the modes.
NnsslSpacing parse_nnssl_spacing(const std::string& mode);

struct PlansLikeNnssl {
  std::string pretraining_name;  // -n: names the plans
  std::string checkpoint_path;   // -pc, as written into pretrain_info
  NnsslSpacing spacing = NnsslSpacing::DefaultNnunet;
  std::vector<double> fixed_spacing;  // -os, for Fixed
};

// The new plans from `base_plans` (read from `source`) and the checkpoint's nnssl_adaptation_plan and citations.
// Throws FileError(source or the checkpoint, ...) naming what is missing: no 3d_fullres, a plan without the keys
// nnU-Net reads, a fixed spacing without three positive values.
ordered_json plans_like_nnssl(const ordered_json& base_plans, const std::string& source,
                              const nlohmann::json& adaptation_plan, const nlohmann::json& citations,
                              const PlansLikeNnssl& options);

}  // namespace medseg::planning
