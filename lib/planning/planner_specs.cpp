#include "planning/planner_specs.h"

#include <set>

#include "core/data_files.h"
#include "core/error.h"
#include "core/json_object_reader.h"
#include "core/strings.h"

namespace medseg::planning {
namespace {

const std::set<std::string> kCommonKeys{"format_version",
                                        "name",
                                        "description",
                                        "experiment_planner_used",
                                        "default_plans_name",
                                        "network",
                                        "gpu_memory_target_gb",
                                        "anisotropy_threshold",
                                        "batch",
                                        "shares_nnUNetPlans_data",
                                        "resampling"};
const std::set<std::string> kUNetKeys{"reference",        "shrink_while", "features", "feature_map_min_edge_length",
                                      "blocks_per_stage", "lowres"};
const std::set<std::string> kSwinKeys{"swin"};

std::set<std::string> operator+(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

constexpr int kMaxStages = 32, kMaxBlocks = 64, kMaxFeatures = 16384, kMaxBatch = 65536;

UNetPreset read_unet(const JsonObjectReader& r) {
  UNetPreset u;
  const JsonObjectReader ref = r.object("reference", true);
  ref.check_keys({"feature_maps_3d", "feature_maps_2d", "gpu_memory_gb", "batch_size_3d", "batch_size_2d"});
  u.reference.feature_maps_3d = ref.number("feature_maps_3d", 0, 1e18, true);
  u.reference.feature_maps_2d = ref.number("feature_maps_2d", 0, 1e18, true);
  u.reference.gpu_memory_gb = ref.number("gpu_memory_gb", 0, 1e6, true);
  u.reference.batch_size_3d = ref.integer("batch_size_3d", 1, kMaxBatch, &u.reference.batch_size_3d);
  u.reference.batch_size_2d = ref.integer("batch_size_2d", 1, kMaxBatch, &u.reference.batch_size_2d);
  u.shrink_while = r.choice<ShrinkRule>(
      "shrink_while", {{"2*estimate/reference_batch > reference", ShrinkRule::TwoSamplesOfReferenceBatch},
                       {"estimate > reference", ShrinkRule::Estimate}});
  const JsonObjectReader f = r.object("features", false);
  f.check_keys({"base", "max_3d", "max_2d"});
  u.base_features = f.integer("base", 1, kMaxFeatures, &u.base_features);
  u.max_features_3d = f.integer("max_3d", u.base_features, kMaxFeatures, &u.max_features_3d);
  u.max_features_2d = f.integer("max_2d", u.base_features, kMaxFeatures, &u.max_features_2d);
  u.feature_map_min_edge = r.integer("feature_map_min_edge_length", 1, 1024, &u.feature_map_min_edge);
  const JsonObjectReader b = r.object("blocks_per_stage", true);
  b.check_keys({"encoder", "decoder"});
  u.encoder_blocks = b.integers("encoder", 1, kMaxBlocks, kMaxStages);  // one entry per stage
  u.decoder_convs = b.integers("decoder", 1, kMaxBlocks, kMaxStages);
  if (u.decoder_convs.size() + 1 != u.encoder_blocks.size())
    throw b.error("decoder", concat("has ", u.decoder_convs.size(), " entries (must be one fewer than encoder's ",
                                    u.encoder_blocks.size(), ")"));
  const JsonObjectReader low = r.object("lowres", false);
  low.check_keys({"creation_threshold", "spacing_step"});
  u.lowres_creation_threshold = low.number("creation_threshold", 0, 1, false, &u.lowres_creation_threshold);
  u.lowres_spacing_step = low.number("spacing_step", 1.01, 2, false, &u.lowres_spacing_step);
  return u;
}

SwinPreset read_swin(const JsonObjectReader& r) {
  SwinPreset s;
  const JsonObjectReader w = r.object("swin", false);
  w.check_keys({"feature_size", "small_target_feature_size", "small_target_below_gb"});
  // MONAI's SwinUNETR splits feature_size into heads 3-6-12-24 and normalises it in groups of 12.
  auto feature_size = [&](const char* key, int fallback) {
    const int v = w.integer(key, 12, kMaxFeatures, &fallback);
    if (v % 12 != 0) throw w.error(key, concat("is ", v, " (must be a multiple of 12)"));
    return v;
  };
  s.feature_size = feature_size("feature_size", s.feature_size);
  s.small_target_feature_size = feature_size("small_target_feature_size", s.small_target_feature_size);
  s.small_target_below_gb = w.number("small_target_below_gb", 0, 1e6, false, &s.small_target_below_gb);
  return s;
}

ResamplingPreset read_resampling(const JsonObjectReader& r) {
  ResamplingPreset p;
  if (!r.has("resampling")) return p;
  const JsonObjectReader o = r.object("resampling", true);
  o.check_keys({"function", "force_separate_z", "separate_z_anisotropy_threshold"});
  p.torch = o.choice<bool>("function", {{"resample_data_or_seg_to_shape", false}, {"resample_torch_fornnunet", true}});
  if (o.has("force_separate_z") && !o.is_null("force_separate_z"))
    p.force_separate_z = o.boolean("force_separate_z", false);
  if (o.has("separate_z_anisotropy_threshold"))
    p.separate_z_anisotropy_threshold = o.number("separate_z_anisotropy_threshold", 1, 1000, false);
  return p;
}

}  // namespace

PlannerSpec planner_preset_from_json(const json& j, const std::string& source) {
  const JsonObjectReader r(j, source, "", "a planner preset");
  const int version = r.integer("format_version", 0, 1 << 30);
  if (version != kPlannerPresetFormatVersion)
    throw r.error("format_version",
                  concat("is ", version, " (this medseg reads version ", kPlannerPresetFormatVersion, ")"));
  PlannerSpec s;
  s.source = source;
  s.network = r.choice<NetworkKind>("network", {{"PlainConvUNet", NetworkKind::PlainConvUNet},
                                                {"ResidualEncoderUNet", NetworkKind::ResidualEncoderUNet},
                                                {"SwinUNETR", NetworkKind::SwinUNETR}});
  const bool swin = s.network == NetworkKind::SwinUNETR;
  r.check_keys(kCommonKeys + (swin ? kSwinKeys : kUNetKeys), swin ? kUNetKeys : kSwinKeys,
               "network " + r.string("network"));
  s.name = r.file_name("name");
  s.experiment_planner_used = r.string("experiment_planner_used", &s.name);
  const std::string no_description;
  s.description = r.string("description", &no_description);
  s.default_plans_name = r.file_name("default_plans_name");
  s.default_target_gb = r.number("gpu_memory_target_gb", 0, 1e6, true);
  s.anisotropy_threshold = r.number("anisotropy_threshold", 1, 1000, false, &s.anisotropy_threshold);
  s.shares_default_data_identifiers = r.boolean("shares_nnUNetPlans_data", false);
  s.resampling = read_resampling(r);
  const JsonObjectReader b = r.object("batch", true);
  b.check_keys({"min", "max_dataset_covered"});
  s.min_batch = b.integer("min", 1, kMaxBatch, &s.min_batch);
  s.max_dataset_covered = b.number("max_dataset_covered", 0, 1, true);
  if (swin)
    s.swin = read_swin(r);
  else
    s.unet = read_unet(r);
  return s;
}

PlannerSpec load_planner_preset(const std::string& path) { return planner_preset_from_json(read_json(path), path); }

std::vector<std::string> planner_preset_dirs(const std::string& presets_dir) {
  return data_search_dirs("plans", "MEDSEG_PLANS_PRESETS", presets_dir, "--presets");
}

namespace {

// The message for a planner name no preset folder holds: the presets there are and where they live.
std::string unknown_planner(const std::string& name_or_path, const std::vector<std::string>& dirs) {
  std::string known, where;
  for (const auto& n : named_jsons(dirs)) known += (known.empty() ? "" : ", ") + n;
  for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d;
  return concat("unknown planner '", name_or_path, "' (known: ", known.empty() ? "none" : known,
                "; a preset is NAME.json in ", where, ", or give a .json path)");
}

}  // namespace

PlannerSpec find_planner_preset(const std::string& name_or_path, const std::string& presets_dir) {
  if (ends_with(name_or_path, ".json") || name_or_path.find('/') != std::string::npos)
    return load_planner_preset(name_or_path);
  const std::vector<std::string> dirs = planner_preset_dirs(presets_dir);
  const std::string path = find_named_json(dirs, name_or_path);
  MEDSEG_CHECK(!path.empty(), unknown_planner(name_or_path, dirs));
  PlannerSpec s = load_planner_preset(path);
  // A renamed copy that still carries the old name would write the old planner into the plans.
  MEDSEG_CHECK_FILE(s.name == name_or_path, path, "key 'name' is '", s.name, "' but the file is the preset '",
                    name_or_path, "'");
  return s;
}

}  // namespace medseg::planning
