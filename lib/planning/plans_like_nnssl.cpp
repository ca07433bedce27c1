#include "planning/plans_like_nnssl.h"

#include <cstdio>

#include "core/error.h"
#include "plans/nnssl_adaptation_plan.h"
#include "plans/plans.h"

namespace medseg::planning {

namespace {

using json = nlohmann::json;

json pretrain_info(const NnsslAdaptationPlan& plan, const json& citations, const PlansLikeNnssl& o) {
  return {{"checkpoint_path", o.checkpoint_path},
          {"checkpoint_name", o.pretraining_name},
          {"key_to_encoder", plan.key_to_encoder},
          {"key_to_stem", plan.key_to_stem},
          {"keys_to_in_proj", plan.keys_to_in_proj},
          {"key_to_lpe", plan.key_to_lpe ? json(*plan.key_to_lpe) : json()},
          {"pt_num_in_channels", plan.pretrain_num_input_channels},
          {"pt_used_patchsize", plan.pretrain_config_patch_size},
          {"pt_recommended_downstream_patchsize", plan.recommended_patch_size},
          {"citations", citations.is_null() ? json::array() : citations}};
}

// like_nnssl.py's new_spacing_from_mode.
json new_spacing(const json& base, const NnsslAdaptationPlan& plan, const PlansLikeNnssl& o) {
  if (o.spacing == NnsslSpacing::DefaultNnunet) return base;
  if (o.spacing == NnsslSpacing::Fixed) {
    MEDSEG_CHECK(o.fixed_spacing.size() == 3, "-am fixed needs -os with three spacings, got ", o.fixed_spacing.size());
    for (const double s : o.fixed_spacing) MEDSEG_CHECK(s > 0 && s < 1e4, "-os: spacing ", s, " is not in (0, 1e4)");
    return o.fixed_spacing;
  }
  // The pretraining did not resample: nnU-Net falls back to the dataset's.
  return plan.pretrain_spacing ? json(*plan.pretrain_spacing) : base;
}

std::string data_identifier(const json& spacing, std::size_t channels) {
  std::string id = "Spacing_";
  for (const json& s : spacing) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "_%.2f", s.get<double>());
    id += buf;
  }
  id += "___Norm_";
  for (std::size_t c = 0; c < channels; ++c) id += "_Z";
  return id;
}

// The checkpoint's architecture in plans.json's form (nnssl's arch_class_name and arch_kwargs_requiring_import
// renamed as nnU-Net renames them).
ordered_json architecture_of(const NnsslAdaptationPlan& plan) {
  return {{"network_class_name", plan.arch_class_name},
          {"arch_kwargs", plan.arch_kwargs},
          {"_kw_requires_import", plan.arch_kwargs_requiring_import}};
}

}  // namespace

NnsslSpacing parse_nnssl_spacing(const std::string& mode) {
  if (mode == "like_pretrained") return NnsslSpacing::LikePretrained;
  if (mode == "default_nnunet") return NnsslSpacing::DefaultNnunet;
  if (mode == "fixed") return NnsslSpacing::Fixed;
  if (mode == "no_resample")
    throw Error(
        "-am no_resample: medseg's preprocessing resamples every case to one spacing; use like_pretrained, "
        "default_nnunet or fixed");
  throw Error("-am '" + mode + "' is not an adaptation mode (like_pretrained, default_nnunet, fixed)");
}

ordered_json plans_like_nnssl(const ordered_json& base_plans, const std::string& source, const json& adaptation_plan,
                              const json& citations, const PlansLikeNnssl& o) {
  const std::string& ck = o.checkpoint_path;
  MEDSEG_CHECK_FILE(base_plans.is_object() && base_plans.contains("configurations"), source, "has no 'configurations'");
  const json base_configs = json(base_plans.at("configurations"));
  MEDSEG_CHECK_FILE(base_configs.contains("3d_fullres"), source,
                    "has no 3d_fullres configuration (nnssl's encoders are 3D)");
  const NnsslAdaptationPlan plan = nnssl_adaptation_plan_from_json(adaptation_plan, ck);
  MEDSEG_CHECK_FILE(!plan.recommended_patch_size.empty(), ck,
                    "nnssl_adaptation_plan has no 'recommended_downstream_patchsize' (the downstream patch)");
  ordered_json c = ordered_json(resolve_configuration(base_configs, "3d_fullres", source));
  const json spacing = new_spacing(c.at("spacing"), plan, o);
  const std::size_t channels = c.at("normalization_schemes").size();
  c["spacing"] = spacing;
  c["batch_size"] = 2;
  c["normalization_schemes"] = std::vector<std::string>(channels, "ZScoreNormalization");
  c["data_identifier"] = data_identifier(spacing, channels);
  c["preprocessor_name"] = "DefaultPreprocessor";
  c["architecture"] = architecture_of(plan);
  c["patch_size"] = plan.recommended_patch_size;
  ordered_json plans = base_plans;
  plans["pretrain_info"] = pretrain_info(plan, citations, o);
  plans["configurations"] = ordered_json::object({{"3d_fullres", c}});
  plans["plans_name"] = "ptPlans__" + o.pretraining_name + "____" + c["data_identifier"].get<std::string>();
  return plans;
}

}  // namespace medseg::planning
