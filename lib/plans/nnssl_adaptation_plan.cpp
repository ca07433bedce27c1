#include "plans/nnssl_adaptation_plan.h"

#include "core/error.h"

namespace medseg::planning {

namespace {

const json& key_of(const json& o, const char* key, const std::string& source, const std::string& where) {
  MEDSEG_CHECK_FILE(o.is_object() && o.contains(key), source, where, " has no '", key, "'");
  return o.at(key);
}

std::string text(const json& o, const char* key, const std::string& source) {
  const json& v = key_of(o, key, source, "nnssl_adaptation_plan");
  MEDSEG_CHECK_FILE(v.is_string(), source, "nnssl_adaptation_plan.", key, " is not a string");
  return v.get<std::string>();
}

bool given(const json& o, const char* key) { return o.contains(key) && !o.at(key).is_null(); }

std::vector<int64_t> patch(const json& v, const std::string& source, const std::string& where) {
  MEDSEG_CHECK_FILE(v.is_array() && v.size() == 3, source, where, " is not a 3D patch size");
  std::vector<int64_t> p;
  for (const json& e : v) {
    MEDSEG_CHECK_FILE(e.is_number_integer() && e.get<int64_t>() > 0 && e.get<int64_t>() <= 4096, source, where,
                      " holds ", e.dump(), " (not a size of 1 to 4096)");
    p.push_back(e.get<int64_t>());
  }
  return p;
}

// The pretraining's configuration: the first of pretrain_plan.configurations, as nnU-Net takes it.
const json& pretrain_configuration(const json& plan, const std::string& source) {
  const json& configs = key_of(key_of(plan, "pretrain_plan", source, "nnssl_adaptation_plan"), "configurations", source,
                               "nnssl_adaptation_plan.pretrain_plan");
  MEDSEG_CHECK_FILE(configs.is_object() && !configs.empty(), source,
                    "nnssl_adaptation_plan.pretrain_plan.configurations is empty");
  return configs.begin().value();
}

std::optional<std::vector<double>> spacing_of(const json& config, const std::string& source) {
  if (!given(config, "spacing")) return std::nullopt;  // the pretraining did not resample
  const json& s = config.at("spacing");
  MEDSEG_CHECK_FILE(s.is_array() && s.size() == 3, source, "the pretrain plan's spacing is ", s.dump(),
                    " (three values or null)");
  std::vector<double> out;
  for (const json& v : s) {
    MEDSEG_CHECK_FILE(v.is_number() && v.get<double>() > 0, source, "the pretrain plan's spacing holds ", v.dump());
    out.push_back(v.get<double>());
  }
  return out;
}

void read_keys(NnsslAdaptationPlan& p, const json& plan, const std::string& source) {
  p.key_to_encoder = text(plan, "key_to_encoder", source);
  p.key_to_stem = text(plan, "key_to_stem", source);
  if (given(plan, "key_to_lpe")) p.key_to_lpe = text(plan, "key_to_lpe", source);
  const json& in_proj = key_of(plan, "keys_to_in_proj", source, "nnssl_adaptation_plan");
  MEDSEG_CHECK_FILE(in_proj.is_array() && !in_proj.empty(), source, "nnssl_adaptation_plan.keys_to_in_proj is empty");
  for (const json& k : in_proj) {
    MEDSEG_CHECK_FILE(k.is_string(), source, "nnssl_adaptation_plan.keys_to_in_proj holds ", k.dump());
    p.keys_to_in_proj.push_back(k.get<std::string>());
  }
}

void read_architecture(NnsslAdaptationPlan& p, const json& plan, const std::string& source) {
  const json& a = key_of(plan, "architecture_plans", source, "nnssl_adaptation_plan");
  const json& name = key_of(a, "arch_class_name", source, "nnssl_adaptation_plan.architecture_plans");
  MEDSEG_CHECK_FILE(name.is_string(), source,
                    "nnssl_adaptation_plan.architecture_plans.arch_class_name is not a string");
  p.arch_class_name = name.get<std::string>();
  p.arch_kwargs = a.value("arch_kwargs", json());
  p.arch_kwargs_requiring_import = a.value("arch_kwargs_requiring_import", json());
}

}  // namespace

NnsslAdaptationPlan nnssl_adaptation_plan_from_json(const json& plan, const std::string& source) {
  NnsslAdaptationPlan p;
  read_keys(p, plan, source);
  const json& channels = key_of(plan, "pretrain_num_input_channels", source, "nnssl_adaptation_plan");
  MEDSEG_CHECK_FILE(channels.is_number_integer() && channels.get<int64_t>() >= 1, source,
                    "nnssl_adaptation_plan.pretrain_num_input_channels is ", channels.dump());
  p.pretrain_num_input_channels = channels.get<int64_t>();
  const json& config = pretrain_configuration(plan, source);
  p.pretrain_config_patch_size = patch(key_of(config, "patch_size", source, "the pretrain plan's configuration"),
                                       source, "the pretrain plan's patch_size");
  if (given(plan, "pretrain_patch_size"))
    p.pretrain_patch_size = patch(plan.at("pretrain_patch_size"), source, "nnssl_adaptation_plan.pretrain_patch_size");
  p.pretrain_spacing = spacing_of(config, source);
  if (given(plan, "recommended_downstream_patchsize"))
    p.recommended_patch_size = patch(plan.at("recommended_downstream_patchsize"), source,
                                     "nnssl_adaptation_plan.recommended_downstream_patchsize");
  read_architecture(p, plan, source);
  return p;
}

}  // namespace medseg::planning
