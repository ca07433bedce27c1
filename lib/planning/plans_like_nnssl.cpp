#include "planning/plans_like_nnssl.h"

#include <cstdio>

#include "core/error.h"
#include "plans/plans.h"

namespace medseg::planning {

namespace {

using json = nlohmann::json;

const json& key(const json& o, const char* name, const std::string& where, const std::string& file) {
  MEDSEG_CHECK_FILE(o.is_object() && o.contains(name), file, where, " has no '", name, "'");
  return o.at(name);
}

// The pretraining's configuration (the first of pretrain_plan.configurations, as nnU-Net takes it) and its name.
std::pair<std::string, json> pretrain_configuration(const json& plan, const std::string& file) {
  const json& configs =
      key(key(plan, "pretrain_plan", "nnssl_adaptation_plan", file), "configurations", "pretrain_plan", file);
  MEDSEG_CHECK_FILE(configs.is_object() && !configs.empty(), file, "pretrain_plan.configurations is empty");
  return {configs.begin().key(), configs.begin().value()};
}

json pretrain_info(const json& plan, const json& citations, const PlansLikeNnssl& o, const std::string& file) {
  const json config = pretrain_configuration(plan, file).second;
  return {{"checkpoint_path", o.checkpoint_path},
          {"checkpoint_name", o.pretraining_name},
          {"key_to_encoder", key(plan, "key_to_encoder", "nnssl_adaptation_plan", file)},
          {"key_to_stem", key(plan, "key_to_stem", "nnssl_adaptation_plan", file)},
          {"keys_to_in_proj", key(plan, "keys_to_in_proj", "nnssl_adaptation_plan", file)},
          {"key_to_lpe", plan.value("key_to_lpe", json())},
          {"pt_num_in_channels", key(plan, "pretrain_num_input_channels", "nnssl_adaptation_plan", file)},
          {"pt_used_patchsize", key(config, "patch_size", "the pretrain plan's configuration", file)},
          {"pt_recommended_downstream_patchsize",
           key(plan, "recommended_downstream_patchsize", "nnssl_adaptation_plan", file)},
          {"citations", citations.is_null() ? json::array() : citations}};
}

// like_nnssl.py's new_spacing_from_mode.
json new_spacing(const json& base, const json& plan, const PlansLikeNnssl& o, const std::string& file) {
  if (o.spacing == NnsslSpacing::DefaultNnunet) return base;
  if (o.spacing == NnsslSpacing::Fixed) {
    MEDSEG_CHECK(o.fixed_spacing.size() == 3, "-am fixed needs -os with three spacings, got ", o.fixed_spacing.size());
    for (const double s : o.fixed_spacing) MEDSEG_CHECK(s > 0 && s < 1e4, "-os: spacing ", s, " is not in (0, 1e4)");
    return o.fixed_spacing;
  }
  const json pretrain = pretrain_configuration(plan, file).second.value("spacing", json());
  if (pretrain.is_null()) return base;  // the pretraining did not resample: nnU-Net falls back to the dataset's
  MEDSEG_CHECK_FILE(pretrain.is_array() && pretrain.size() == 3, file, "the pretrain plan's spacing is ",
                    pretrain.dump(), " (three values or null)");
  return pretrain;
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
ordered_json architecture_of(const json& plan, const std::string& file) {
  const json& a = key(plan, "architecture_plans", "nnssl_adaptation_plan", file);
  const json& name = key(a, "arch_class_name", "architecture_plans", file);
  MEDSEG_CHECK_FILE(name.is_string(), file, "architecture_plans.arch_class_name is not a string");
  return {{"network_class_name", name},
          {"arch_kwargs", a.value("arch_kwargs", json())},
          {"_kw_requires_import", a.value("arch_kwargs_requiring_import", json())}};
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
  ordered_json c = ordered_json(resolve_configuration(base_configs, "3d_fullres", source));
  const json spacing = new_spacing(c.at("spacing"), adaptation_plan, o, ck);
  const std::size_t channels = c.at("normalization_schemes").size();
  c["spacing"] = spacing;
  c["batch_size"] = 2;
  c["normalization_schemes"] = std::vector<std::string>(channels, "ZScoreNormalization");
  c["data_identifier"] = data_identifier(spacing, channels);
  c["preprocessor_name"] = "DefaultPreprocessor";
  c["architecture"] = architecture_of(adaptation_plan, ck);
  c["patch_size"] = key(adaptation_plan, "recommended_downstream_patchsize", "nnssl_adaptation_plan", ck);
  ordered_json plans = base_plans;
  plans["pretrain_info"] = pretrain_info(adaptation_plan, citations, o, ck);
  plans["configurations"] = ordered_json::object({{"3d_fullres", c}});
  plans["plans_name"] = "ptPlans__" + o.pretraining_name + "____" + c["data_identifier"].get<std::string>();
  return plans;
}

}  // namespace medseg::planning
