#include "plans/plans.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/json_object_reader.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "plans/normalization_names.h"
#include "plans/plan_limits.h"

namespace medseg::planning {

std::optional<PrimusSize> primus_size(const std::string& letter) {
  static const std::map<std::string, PrimusSize> sizes = {
      {"S", {396, 12, 6}}, {"B", {792, 12, 12}}, {"M", {864, 16, 12}}, {"L", {1056, 24, 16}}};
  const auto it = sizes.find(letter);
  return it == sizes.end() ? std::nullopt : std::optional<PrimusSize>(it->second);
}

void set_residual_embedding(PrimusPlan& p, int version) {
  MEDSEG_CHECK(version == 2 || version == 3, "Primus: no V", version, " patch embedding (V2 or V3)");
  p.embed_depths = {1, 1, 1};
  p.embed_channels = version == 2 ? std::vector<int>{32, 32, 64, 128} : std::vector<int>{32, 64, 256, 1024};
  p.embed_leaky_relu = p.embed_add_skips = version == 3;
}

namespace {

// plans.json is read through JsonObjectReader (core/json_object_reader.h), scoped: a configuration's messages
// read "<file>: configuration '3d_fullres': key 'patch_size' ...". arch_kwargs and the resampling kwargs are
// read with their keys named alone ("key 'n_stages'"), as the constructor arguments they are.

// A name that becomes part of a path (data_identifier, a configuration's name): one path component.
void check_plans_name(const JsonObjectReader& r, const std::string& value, const std::string& what) {
  check_path_component(value, r.in_scope(what), r.source());
}

// Lists of per-stage rows; a scalar entry (allowed by DNA) is expanded to `dim` copies.
std::vector<std::vector<int>> get_rows(const JsonObjectReader& k, const std::string& key, int dim, int n) {
  const json& v = k.at(key);
  const std::string what = k.in_scope(k.key_name(key));
  if (v.is_number()) return std::vector<std::vector<int>>(n, std::vector<int>(dim, json_as<int>(v, what, k.source())));
  k.check(v.is_array(), k.key_name(key), " must be a list");
  std::vector<std::vector<int>> rows;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& r = v[i];
    const std::string at = concat(what, "[", i, "]");
    if (r.is_number()) {
      rows.emplace_back(dim, json_as<int>(r, at, k.source()));
      continue;
    }
    k.check(r.is_array() && static_cast<int>(r.size()) == dim, k.key_name(key), " rows must have ", dim, " entries");
    rows.push_back(json_as<std::vector<int>>(r, at, k.source()));
  }
  k.check(static_cast<int>(rows.size()) == n, k.key_name(key), " has ", rows.size(), " rows, expected n_stages=", n);
  return rows;
}

// One value per stage; a scalar is expanded to `n` copies.
std::vector<int> get_per_stage(const JsonObjectReader& k, const std::string& key, int n) {
  if (k.at(key).is_number()) return std::vector<int>(n, k.get<int>(key));
  auto out = k.get<std::vector<int>>(key);
  k.check(static_cast<int>(out.size()) == n, k.key_name(key), " has ", out.size(), " entries, expected ", n);
  return out;
}

int dim_of_conv_op(const std::string& conv_op) {
  if (conv_op.find("Conv3d") != std::string::npos) return 3;
  if (conv_op.find("Conv2d") != std::string::npos) return 2;
  return 0;
}

std::string after_last_dot(const std::string& s) {
  const auto p = s.rfind('.');
  return p == std::string::npos ? s : s.substr(p + 1);
}

// Assigns only when the value differs, so numbers keep their spelling (36 vs 36.0) on round trips.
template <class T>
void set_if_changed(json& j, const std::string& key, const T& value) {
  json v = value;
  if (!j.contains(key) || j.at(key) != v) j[key] = std::move(v);
}

ResamplingKwargs resampling_from_json(const json& j, const JsonObjectReader& config) {
  const auto k = JsonObjectReader::scoped(j, config.source(), config.scope(), "resampling kwargs");
  ResamplingKwargs r;
  r.raw = j;
  r.is_seg = k.get_or<bool>("is_seg", false);
  r.order = k.get_or<int>("order", r.is_seg ? 1 : 3);
  r.order_z = k.get_or<int>("order_z", 0);
  r.force_separate_z = k.get_optional<bool>("force_separate_z");
  r.separate_z_anisotropy_threshold =
      k.get_or<double>("separate_z_anisotropy_threshold", r.separate_z_anisotropy_threshold);
  r.memefficient_seg_resampling = k.get_or<bool>("memefficient_seg_resampling", false);
  r.mode = k.get_or<std::string>("mode", r.mode);
  r.aniso_axis_mode = k.get_or<std::string>("aniso_axis_mode", r.aniso_axis_mode);
  k.check_range(r.order, 0, 5, k.key_name("order"));
  k.check_range(r.order_z, 0, 5, k.key_name("order_z"));
  k.check(r.separate_z_anisotropy_threshold > 0 && std::isfinite(r.separate_z_anisotropy_threshold),
          "separate_z_anisotropy_threshold must be a positive number");
  return r;
}

// A key is written when the file had it, when its value is not the default, or with `write_default`:
// resample_torch_fornnunet takes no `order` and resample_data_or_seg_to_shape no `mode`, so a key that
// neither the file nor a change asks for stays out.
template <class T>
void set_kwarg(json& j, const std::string& key, const T& value, const T& fallback, bool write_default) {
  if (j.contains(key) || !(value == fallback) || write_default) set_if_changed(j, key, value);
}

json resampling_to_json(const ResamplingKwargs& r) {
  json j = r.raw.is_object() ? r.raw : json::object();
  const ResamplingKwargs d;
  const bool made_in_code = !r.raw.is_object();  // nnU-Net's default function: order and order_z spelled out
  set_if_changed(j, "is_seg", r.is_seg);
  set_kwarg(j, "order", r.order, r.is_seg ? 1 : 3, made_in_code);
  set_kwarg(j, "order_z", r.order_z, d.order_z, made_in_code);
  json fz = r.force_separate_z ? json(*r.force_separate_z) : json(nullptr);
  if (!j.contains("force_separate_z") || j.at("force_separate_z") != fz) j["force_separate_z"] = fz;
  set_kwarg(j, "separate_z_anisotropy_threshold", r.separate_z_anisotropy_threshold, d.separate_z_anisotropy_threshold,
            false);
  set_kwarg(j, "memefficient_seg_resampling", r.memefficient_seg_resampling, d.memefficient_seg_resampling, false);
  set_kwarg(j, "mode", r.mode, d.mode, false);
  set_kwarg(j, "aniso_axis_mode", r.aniso_axis_mode, d.aniso_axis_mode, false);
  return j;
}

SwinPlan swin_from_json(const JsonObjectReader& k) {
  SwinPlan s;
  s.feature_size = k.get_or<int>("feature_size", s.feature_size);
  s.depths = k.get_or<std::vector<int>>("depths", s.depths);
  s.num_heads = k.get_or<std::vector<int>>("num_heads", s.num_heads);
  s.window_size = k.get_or<int>("window_size", s.window_size);
  s.patch_size = k.get_or<int>("patch_size", s.patch_size);
  s.use_v2 = k.get_or<bool>("use_v2", s.use_v2);
  s.use_checkpoint = k.get_or<bool>("use_checkpoint", s.use_checkpoint);
  s.normalize = k.get_or<bool>("normalize", s.normalize);
  s.drop_rate = k.get_or<double>("drop_rate", s.drop_rate);
  s.attn_drop_rate = k.get_or<double>("attn_drop_rate", s.attn_drop_rate);
  s.dropout_path_rate = k.get_or<double>("dropout_path_rate", s.dropout_path_rate);
  k.check(s.feature_size > 0 && s.feature_size % 12 == 0, "SwinUNETR feature_size must be a positive multiple of 12");
  k.check_range(s.feature_size, 12, PlanLimits::max_features, k.key_name("feature_size"));
  k.check(s.depths.size() == 4 && s.num_heads.size() == 4, "SwinUNETR depths and num_heads need 4 entries");
  for (std::size_t i = 0; i < 4; ++i) {
    k.check_range(s.depths[i], 1, PlanLimits::max_convs_per_stage, concat(k.key_name("depths"), "[", i, "]"));
    k.check_range(s.num_heads[i], 1, s.feature_size << i, concat(k.key_name("num_heads"), "[", i, "]"));
    k.check((s.feature_size << i) % s.num_heads[i] == 0, k.key_name("num_heads"), "[", i, "] is ", s.num_heads[i],
            ", which does not divide the stage width ", s.feature_size << i);
  }
  k.check_range(s.window_size, 1, 64, k.key_name("window_size"));
  k.check(s.patch_size == 2, k.key_name("patch_size"), " is ", s.patch_size, " (only 2 is supported)");
  const std::pair<const char*, double> rates[] = {
      {"drop_rate", s.drop_rate}, {"attn_drop_rate", s.attn_drop_rate}, {"dropout_path_rate", s.dropout_path_rate}};
  for (const auto& [key, r] : rates)
    k.check(r >= 0 && r < 1, k.key_name(key), " is ", json(r).dump(), " (must be in [0, 1))");
  return s;
}

// PrimusV2 builds PatchEmbed_deeper with its defaults (base_features 32 doubling per level, 3 levels of one
// block, ReLU); PrimusV3 builds PatchEmbedDeeperControlled from its own depth_per_level, ch_per_level and add_skips,
// whose defaults set_residual_embedding gives.
void read_residual_embedding(PrimusPlan& p, const std::string& version, const JsonObjectReader& k) {
  set_residual_embedding(p, version == "PrimusV2" ? 2 : 3);
  if (version == "PrimusV2") return;
  p.embed_depths = k.get_or<std::vector<int>>("depth_per_level", p.embed_depths);
  p.embed_channels = k.get_or<std::vector<int>>("ch_per_level", p.embed_channels);
  p.embed_add_skips = k.get_or<bool>("add_skips", p.embed_add_skips);
  k.check(!p.embed_depths.empty() && p.embed_depths.size() <= 6, k.key_name("depth_per_level"), " needs 1 to 6 levels");
  k.check(p.embed_channels.size() == p.embed_depths.size() + 1, k.key_name("ch_per_level"), " needs ",
          p.embed_depths.size() + 1, " entries (one more than depth_per_level), got ", p.embed_channels.size());
  for (std::size_t i = 0; i < p.embed_depths.size(); ++i)
    k.check_range(p.embed_depths[i], 1, PlanLimits::max_convs_per_stage,
                  concat(k.key_name("depth_per_level"), "[", i, "]"));
  for (std::size_t i = 0; i < p.embed_channels.size(); ++i)
    k.check_range(p.embed_channels[i], 1, PlanLimits::max_features, concat(k.key_name("ch_per_level"), "[", i, "]"));
}

PrimusPlan read_primus_kwargs(const JsonObjectReader& k, const std::string& version) {
  PrimusPlan p;
  if (version != "Primus") read_residual_embedding(p, version, k);
  p.embed_dim = k.get<int>("embed_dim");
  p.eva_depth = k.get_or<int>("eva_depth", p.eva_depth);
  p.eva_numheads = k.get_or<int>("eva_numheads", p.eva_numheads);
  p.patch_embed_size = k.get_or<std::vector<int>>("patch_embed_size", p.patch_embed_size);
  p.input_shape = k.get_or<std::vector<int>>("input_shape", p.input_shape);
  p.mlp_ratio = k.get_or<double>("mlp_ratio", p.mlp_ratio);
  p.drop_path_rate = k.get_or<double>("drop_path_rate", p.drop_path_rate);
  p.init_values = k.get_optional<double>("init_values");
  p.scale_attn_inner = k.get_or<bool>("scale_attn_inner", p.scale_attn_inner);
  p.use_rot_pos_emb = k.get_or<bool>("use_rot_pos_emb", p.use_rot_pos_emb);
  p.use_abs_pos_embed = k.get_or<bool>("use_abs_pos_embed", p.use_abs_pos_embed);
  p.num_register_tokens = k.get_or<int>("num_register_tokens", p.num_register_tokens);
  return p;
}

PrimusPlan primus_from_json(const JsonObjectReader& k, const std::string& version) {
  PrimusPlan p = read_primus_kwargs(k, version);
  k.check_range(p.embed_dim, 1, PlanLimits::max_features, k.key_name("embed_dim"));
  k.check_range(p.eva_depth, 1, 64, k.key_name("eva_depth"));
  k.check_range(p.eva_numheads, 1, p.embed_dim, k.key_name("eva_numheads"));
  k.check_range(p.num_register_tokens, 0, 1024, k.key_name("num_register_tokens"));
  k.check(p.mlp_ratio > 0 && p.mlp_ratio <= 64, k.key_name("mlp_ratio"), " is ", json(p.mlp_ratio).dump(),
          " (must be in (0, 64])");
  // eva.py's rule for 3D tokens: the rotary embedding takes head_dim / 1.5, a whole multiple of 4.
  k.check(p.embed_dim % p.eva_numheads == 0 && (p.embed_dim / p.eva_numheads) % 6 == 0, k.key_name("embed_dim"), " / ",
          k.key_name("eva_numheads"), " is ", p.embed_dim, " / ", p.eva_numheads,
          " (each head must be a whole multiple of 6 wide for the 3D rotary embedding)");
  k.check(p.patch_embed_size.size() == 3, k.key_name("patch_embed_size"), " needs 3 entries (Primus is 3D)");
  for (std::size_t i = 0; i < 3; ++i) {
    const int e = p.patch_embed_size[i];
    k.check(e >= 1 && e <= 64 && (e & (e - 1)) == 0, k.key_name("patch_embed_size"), "[", i, "] is ", e,
            " (must be a power of two up to 64)");
  }
  k.check(p.drop_path_rate >= 0 && p.drop_path_rate < 1, k.key_name("drop_path_rate"), " is ",
          json(p.drop_path_rate).dump(), " (must be in [0, 1))");
  if (p.residual_embedding()) {
    const int stride = 1 << p.embed_depths.size();  // the residual embedding halves every axis once per level
    k.check(p.patch_embed_size == std::vector<int>(3, stride), k.key_name("patch_embed_size"), " is ",
            json(p.patch_embed_size).dump(), "; ", version, "'s patch embedding has ", p.embed_depths.size(),
            " levels of stride 2, so it must be ", json(std::vector<int>(3, stride)).dump());
  }
  return p;
}

// nnU-Net before 2.4 stored the U-Net as flat keys; rebuild the "architecture" block from them
// the way nnU-Net's ConfigurationManager does.
json convert_legacy_configuration(json c, const std::string& file, const std::string& scope) {
  const auto r = JsonObjectReader::scoped(c, file, scope, "the configuration");
  const auto cls = r.get<std::string>("UNet_class_name");
  r.check(cls == "PlainConvUNet" || cls == "ResidualEncoderUNet", "unknown legacy UNet_class_name '", cls, "'");
  const std::string full = cls == "PlainConvUNet"
                               ? "dynamic_network_architectures.architectures.unet.PlainConvUNet"
                               : "dynamic_network_architectures.architectures.residual_unet.ResidualEncoderUNet";
  const auto enc = r.get<std::vector<int>>("n_conv_per_stage_encoder");
  const int n = static_cast<int>(enc.size());
  const int dim = static_cast<int>(r.get<std::vector<int>>("patch_size").size());
  const int base = r.get<int>("UNet_base_num_features"), maxf = r.get<int>("unet_max_num_features");
  std::vector<int> feats;
  for (int i = 0; i < n; ++i) feats.push_back(std::min(base << i, maxf));
  const std::string d = std::to_string(dim);
  json k = {{"n_stages", n},
            {"features_per_stage", feats},
            {"conv_op", "torch.nn.modules.conv.Conv" + d + "d"},
            {"kernel_sizes", r.at("conv_kernel_sizes")},
            {"strides", r.at("pool_op_kernel_sizes")},
            {cls == "PlainConvUNet" ? "n_conv_per_stage" : "n_blocks_per_stage", enc},
            {"n_conv_per_stage_decoder", r.at("n_conv_per_stage_decoder")},
            {"conv_bias", true},
            {"norm_op", "torch.nn.modules.instancenorm.InstanceNorm" + d + "d"},
            {"norm_op_kwargs", {{"eps", 1e-05}, {"affine", true}}},
            {"dropout_op", nullptr},
            {"dropout_op_kwargs", nullptr},
            {"nonlin", "torch.nn.LeakyReLU"},
            {"nonlin_kwargs", {{"inplace", true}}}};
  for (const char* key :
       {"UNet_class_name", "UNet_base_num_features", "n_conv_per_stage_encoder", "n_conv_per_stage_decoder",
        "num_pool_per_axis", "pool_op_kernel_sizes", "conv_kernel_sizes", "unet_max_num_features"})
    c.erase(key);
  c["architecture"] = {{"network_class_name", full},
                       {"arch_kwargs", k},
                       {"_kw_requires_import", {"conv_op", "norm_op", "dropout_op", "nonlin"}}};
  return c;
}

// The names of a JSON object's keys, "a, b, c", for a message.
std::string key_list(const json& j) {
  std::string names;
  for (const auto& [k, v] : j.items()) names += (names.empty() ? "" : ", ") + k;
  return names;
}

json resolve_configuration(const JsonObjectReader& configs, const std::string& name,
                           std::vector<std::string>& visited) {
  configs.check(configs.has(name), "configuration '", name, "' does not exist (available: ", key_list(configs.value()),
                ")");
  json c = configs.at(name);
  configs.check(c.is_object(), "configuration '", name, "' is not an object");
  if (!c.contains("inherits_from")) return c;
  const auto parent = JsonObjectReader::scoped(c, configs.source(), concat("configuration '", name, "'"), "")
                          .get<std::string>("inherits_from");
  visited.push_back(name);
  configs.check(std::find(visited.begin(), visited.end(), parent) == visited.end(),
                "circular inherits_from chain at configuration '", name, "' -> '", parent, "'");
  json base = resolve_configuration(configs, parent, visited);
  base.update(c);  // shallow, child keys win (as in nnU-Net)
  return base;
}

// Every per-stage value of a U-Net in its range (a stride of 0 or 10^6 features fail here, naming the
// key, instead of deep in torch or in a huge allocation).
void check_unet_ranges(const ArchitecturePlan& a, const JsonObjectReader& k) {
  const auto each = [&](const std::vector<int>& v, const std::string& what, int lo, int hi) {
    for (std::size_t i = 0; i < v.size(); ++i) k.check_range(v[i], lo, hi, concat(what, "[", i, "]"));
  };
  each(a.features_per_stage, k.key_name("features_per_stage"), 1, PlanLimits::max_features);
  each(a.n_conv_per_stage, k.key_name("n_conv_per_stage"), 1, PlanLimits::max_convs_per_stage);
  each(a.n_blocks_per_stage, k.key_name("n_blocks_per_stage"), 1, PlanLimits::max_convs_per_stage);
  each(a.n_conv_per_stage_decoder, k.key_name("n_conv_per_stage_decoder"), 1, PlanLimits::max_convs_per_stage);
  for (std::size_t s = 0; s < static_cast<std::size_t>(a.n_stages); ++s) {
    const std::string at = concat("[", s, "]");
    each(a.strides[s], k.key_name("strides") + at, 1, PlanLimits::max_stride);
    each(a.kernel_sizes[s], k.key_name("kernel_sizes") + at, 1, PlanLimits::max_kernel_size);
    for (std::size_t d = 0; d < a.kernel_sizes[s].size(); ++d)
      k.check(a.kernel_sizes[s][d] % 2 != 0, k.key_name("kernel_sizes"), at, "[", d, "] is ", a.kernel_sizes[s][d],
              " (must be odd)");
  }
  k.check(a.norm_eps > 0, k.key_name("norm_op_kwargs.eps"), " is ", json(a.norm_eps).dump(), " (must be > 0)");
}

// transpose_forward a permutation of 0..2 (duplicates would drop an axis), transpose_backward its inverse.
void check_transpose(const std::vector<int>& fwd, const std::vector<int>& bwd, const JsonObjectReader& r) {
  const auto is_perm = [](const std::vector<int>& v) {
    std::vector<int> s = v;
    std::sort(s.begin(), s.end());
    return s == std::vector<int>{0, 1, 2};
  };
  r.check(is_perm(fwd), r.key_name("transpose_forward"), " is ", json(fwd).dump(),
          " (must be a permutation of [0, 1, 2])");
  const auto at = [&](int i) { return fwd[static_cast<std::size_t>(bwd[static_cast<std::size_t>(i)])]; };
  r.check(is_perm(bwd) && at(0) == 0 && at(1) == 1 && at(2) == 2, r.key_name("transpose_backward"), " is ",
          json(bwd).dump(), " (must be the inverse of transpose_forward ", json(fwd).dump(), ")");
}

// The network's total stride on `axis`: what each patch edge must be divisible by.
int64_t total_stride(const ArchitecturePlan& arch, std::size_t axis) {
  if (arch.swin) return 32;                                     // patch embedding (2) and four patch mergings
  if (arch.primus) return arch.primus->patch_embed_size[axis];  // the tokens
  int64_t total = 1;
  for (const auto& s : arch.strides) total = std::min<int64_t>(total * s[axis], int64_t{1} << 40);
  return total;
}

// A configuration's patch and batch against its network: 1..max per value, and each patch axis
// divisible by the network's total stride on that axis (else the decoder cannot meet the skips).
void check_patch_and_batch(const std::vector<int>& patch, int batch, const ArchitecturePlan& arch,
                           const JsonObjectReader& r) {
  r.check_range(batch, 1, PlanLimits::max_batch_size, r.key_name("batch_size"));
  for (std::size_t i = 0; i < patch.size(); ++i)
    r.check_range(patch[i], 1, PlanLimits::max_patch_edge, concat(r.key_name("patch_size"), "[", i, "]"));
  if (patch.size() != static_cast<std::size_t>(arch.dim)) return;  // the caller reports the rank mismatch
  for (std::size_t i = 0; i < patch.size(); ++i) {
    const int64_t total = total_stride(arch, i);
    r.check(patch[i] % total == 0, r.key_name("patch_size"), "[", i, "] is ", patch[i],
            ", not divisible by the network's total stride ", total, " on that axis");
  }
}

// The U-Net's stages: convolution rank, stage count and the per-stage lists.
void read_unet_stages(ArchitecturePlan& a, const JsonObjectReader& k) {
  a.conv_op = k.get<std::string>("conv_op");
  a.dim = dim_of_conv_op(a.conv_op);
  a.n_stages = k.get<int>("n_stages");
  k.check_range(a.n_stages, 1, PlanLimits::max_stages, k.key_name("n_stages"));
  if (a.dim == 0) {  // custom conv op: take the rank from the kernel sizes
    const json& ks = k.at("kernel_sizes");
    a.dim = (ks.is_array() && !ks.empty() && ks[0].is_array()) ? static_cast<int>(ks[0].size()) : 3;
  }
  a.features_per_stage = get_per_stage(k, "features_per_stage", a.n_stages);
  a.kernel_sizes = get_rows(k, "kernel_sizes", a.dim, a.n_stages);
  a.strides = get_rows(k, "strides", a.dim, a.n_stages);
  if (k.has("n_conv_per_stage")) a.n_conv_per_stage = get_per_stage(k, "n_conv_per_stage", a.n_stages);
  if (k.has("n_blocks_per_stage")) a.n_blocks_per_stage = get_per_stage(k, "n_blocks_per_stage", a.n_stages);
  k.check(!a.n_conv_per_stage.empty() || !a.n_blocks_per_stage.empty(),
          "arch_kwargs needs n_conv_per_stage or n_blocks_per_stage");
  if (k.has("n_conv_per_stage_decoder"))
    a.n_conv_per_stage_decoder = get_per_stage(k, "n_conv_per_stage_decoder", a.n_stages - 1);
}

// The U-Net's operations (norm, dropout, nonlinearity) with torch's defaults for what their kwargs leave out.
void read_unet_ops(ArchitecturePlan& a, const JsonObjectReader& k) {
  a.conv_bias = k.get_or<bool>("conv_bias", false);
  a.norm_op = k.get_or<std::string>("norm_op", "");
  a.dropout_op = k.get_or<std::string>("dropout_op", "");
  a.nonlin = k.get_or<std::string>("nonlin", "");
  a.norm_op_kwargs = k.has("norm_op_kwargs") ? k.at("norm_op_kwargs") : json(nullptr);
  a.dropout_op_kwargs = k.has("dropout_op_kwargs") ? k.at("dropout_op_kwargs") : json(nullptr);
  a.nonlin_kwargs = k.has("nonlin_kwargs") ? k.at("nonlin_kwargs") : json(nullptr);
  const JsonObjectReader norm = k.optional_object("norm_op_kwargs");
  a.norm_eps = norm.get_or<double>("eps", 1e-5);
  const bool batch_norm = after_last_dot(a.norm_op).rfind("BatchNorm", 0) == 0;
  a.norm_affine = norm.get_or<bool>("affine", batch_norm);  // torch's defaults
  const JsonObjectReader nonlin = k.optional_object("nonlin_kwargs");
  a.nonlin_inplace = nonlin.get_or<bool>("inplace", false);
  a.nonlin_negative_slope = nonlin.get_or<double>("negative_slope", 0.01);
  if (!a.dropout_op.empty()) a.dropout_p = k.optional_object("dropout_op_kwargs").get_or<double>("p", 0.5);
  a.block = k.get_or<std::string>("block", "");
  a.stem_channels = k.get_optional<int>("stem_channels");
  a.nonlin_first = k.get_or<bool>("nonlin_first", false);
}

}  // namespace

json resolve_configuration(const json& configurations, const std::string& name, const std::string& source) {
  std::vector<std::string> visited;
  return resolve_configuration(JsonObjectReader::scoped(configurations, source, "", "'configurations'"), name, visited);
}

namespace {

// The networks nnU-Net builds by name, whatever arch_kwargs say (get_network_via_name.py; the plans that
// nnUNetv2_preprocess_like_nnssl writes from an nnssl checkpoint name them with arch_kwargs null): Primus S, B, M
// and L (PrimusX's sizes with an 8x8x8 patch embedding, layer scale 0.1, scaled attention, no drop path) and
// ResEncL (ResEnc-L's U-Net). Returns the class they are read as, and their arch_kwargs; nullopt for other names.
std::optional<std::pair<std::string, json>> named_network(const std::string& short_name) {
  const auto size =
      short_name.size() == 7 && short_name.rfind("Primus", 0) == 0 ? primus_size(short_name.substr(6)) : std::nullopt;
  if (size)
    return std::pair{std::string("Primus"), json{{"embed_dim", size->embed_dim},
                                                 {"eva_depth", size->eva_depth},
                                                 {"eva_numheads", size->eva_numheads},
                                                 {"patch_embed_size", {8, 8, 8}},
                                                 {"drop_path_rate", 0},
                                                 {"init_values", 0.1},
                                                 {"scale_attn_inner", true}}};
  if (short_name != "ResEncL") return std::nullopt;
  const json k3 = {3, 3, 3}, s1 = {1, 1, 1}, s2 = {2, 2, 2};
  return std::pair{std::string("ResidualEncoderUNet"), json{{"n_stages", 6},
                                                            {"features_per_stage", {32, 64, 128, 256, 320, 320}},
                                                            {"conv_op", "torch.nn.modules.conv.Conv3d"},
                                                            {"kernel_sizes", {k3, k3, k3, k3, k3, k3}},
                                                            {"strides", {s1, s2, s2, s2, s2, s2}},
                                                            {"n_blocks_per_stage", {1, 3, 4, 6, 6, 6}},
                                                            {"n_conv_per_stage_decoder", {1, 1, 1, 1, 1}},
                                                            {"conv_bias", true},
                                                            {"norm_op", "torch.nn.modules.instancenorm.InstanceNorm3d"},
                                                            {"norm_op_kwargs", {{"eps", 1e-05}, {"affine", true}}},
                                                            {"dropout_op", nullptr},
                                                            {"dropout_op_kwargs", nullptr},
                                                            {"nonlin", "torch.nn.LeakyReLU"},
                                                            {"nonlin_kwargs", {{"inplace", true}}}}};
}

}  // namespace

ArchitecturePlan architecture_from_json(const json& arch, const std::string& source, const std::string& scope) {
  const auto r = JsonObjectReader::scoped(arch, source, scope, "'architecture'");
  ArchitecturePlan a;
  a.raw = arch;
  a.network_class_name = r.get<std::string>("network_class_name");
  a.short_name = after_last_dot(a.network_class_name);
  const auto named = named_network(a.short_name);
  if (named) a.short_name = named->first;  // the plans keep the name, which nnU-Net builds the same network from
  const auto k = named ? JsonObjectReader::scoped(named->second, source, scope, "arch_kwargs")
                       : JsonObjectReader::scoped(r.at("arch_kwargs"), source, scope, "arch_kwargs");
  a.kw_requires_import = r.get_or<std::vector<std::string>>("_kw_requires_import", {});
  if (a.short_name == "Primus" || a.short_name == "PrimusV2" || a.short_name == "PrimusV3") {
    a.primus = primus_from_json(k, a.short_name);
    a.dim = 3;
    a.n_stages = 1;
    return a;
  }
  r.check(a.short_name.rfind("Primus", 0) != 0, "network_class_name ", a.network_class_name,
          ": of dynamic-network-architectures' Primus classes Primus, PrimusV2, PrimusV3 and the presets PrimusS, "
          "PrimusB, PrimusM and PrimusL are built, not the other subclasses (name one of the first three with "
          "embed_dim, eva_depth and eva_numheads)");
  if (a.short_name == "SwinUNETR") {
    a.swin = swin_from_json(k);
    a.dim = k.get_or<int>("spatial_dims", 3);
    k.check(a.dim == 2 || a.dim == 3, k.key_name("spatial_dims"), " is ", a.dim, " (must be 2 or 3)");
    a.n_stages = 5;  // the input resolution plus four Swin stages (strides 2,4,8,16,32)
    return a;
  }
  read_unet_stages(a, k);
  read_unet_ops(a, k);
  check_unet_ranges(a, k);
  return a;
}

namespace {

// What the configuration's patches are: identifier, batch, patch, spacing and normalization per channel.
void read_patch_settings(ConfigurationPlan& p, const JsonObjectReader& r) {
  p.data_identifier = r.get<std::string>("data_identifier");
  check_plans_name(r, p.data_identifier, "data_identifier");  // preprocessing writes into <preprocessed>/<id>/
  p.preprocessor_name = r.get<std::string>("preprocessor_name");
  p.batch_size = r.get<int>("batch_size");
  p.patch_size = r.get<std::vector<int>>("patch_size");
  r.check(p.patch_size.size() == 2 || p.patch_size.size() == 3, "patch_size must have 2 or 3 entries");
  p.median_image_size_in_voxels = r.get<std::vector<double>>("median_image_size_in_voxels");
  p.spacing = r.get<std::vector<double>>("spacing");
  r.check(p.spacing.size() == p.patch_size.size(), "spacing and patch_size differ in length");
  for (std::size_t i = 0; i < p.spacing.size(); ++i)
    r.check(p.spacing[i] > 0, r.key_name("spacing"), "[", i, "] is ", json(p.spacing[i]).dump(), " (must be > 0)");
  p.normalization_schemes = r.get<std::vector<std::string>>("normalization_schemes");
  for (std::size_t i = 0; i < p.normalization_schemes.size(); ++i)
    if (!normalization_scheme(p.normalization_schemes[i]))
      r.fail(concat(r.key_name("normalization_schemes"), "[", i, "] '", p.normalization_schemes[i],
                    "' is not a normalization scheme (known: ", known_normalization_names(), ")"));
  p.use_mask_for_norm = r.get<std::vector<bool>>("use_mask_for_norm");
  r.check(p.use_mask_for_norm.size() == p.normalization_schemes.size(),
          "use_mask_for_norm and normalization_schemes differ in length");
}

void read_resampling(ConfigurationPlan& p, const JsonObjectReader& r) {
  p.resampling_fn_data = r.get<std::string>("resampling_fn_data");
  p.resampling_fn_seg = r.get<std::string>("resampling_fn_seg");
  p.resampling_fn_probabilities = r.get<std::string>("resampling_fn_probabilities");
  p.resampling_fn_data_kwargs = resampling_from_json(r.at("resampling_fn_data_kwargs"), r);
  p.resampling_fn_seg_kwargs = resampling_from_json(r.at("resampling_fn_seg_kwargs"), r);
  p.resampling_fn_probabilities_kwargs = resampling_from_json(r.at("resampling_fn_probabilities_kwargs"), r);
}

// The configuration's place in a cascade: its parent in the file and the stages before and after it.
void read_cascade(ConfigurationPlan& p, const JsonObjectReader& r) {
  p.inherits_from = r.get_or<std::string>("inherits_from", "");
  p.previous_stage = r.get_or<std::string>("previous_stage", "");
  if (!p.previous_stage.empty())
    check_plans_name(r, p.previous_stage, "previous_stage");  // OUTPUT/<previous_stage>/, its model folder
  if (r.has("next_stage") && !r.is_null("next_stage")) {      // one name or a list of them
    if (r.at("next_stage").is_string())
      p.next_stage = {r.get<std::string>("next_stage")};
    else
      p.next_stage = r.get<std::vector<std::string>>("next_stage");
  }
  for (const auto& next : p.next_stage) check_plans_name(r, next, "next_stage");  // predicted_next_stage/<next>/
}

void read_network(ConfigurationPlan& p, const JsonObjectReader& r) {
  p.architecture = architecture_from_json(r.at("architecture"), r.source(), r.scope());
  r.check(p.architecture.dim == p.dim(), "architecture rank differs from patch_size rank");
  check_patch_and_batch(p.patch_size, p.batch_size, p.architecture, r);
  if (p.architecture.primus) {  // Primus is built for tiles of the patch size
    PrimusPlan& primus = *p.architecture.primus;
    if (primus.input_shape.empty()) primus.input_shape = p.patch_size;
    r.check(primus.input_shape == p.patch_size,
            "architecture.arch_kwargs.input_shape differs from patch_size (Primus is built for its patch size)");
  }
}

// medseg's own hints (the planner's memory estimate); read leniently, as nnU-Net ignores them.
void read_medseg_hints(ConfigurationPlan& p, const json& c) {
  if (!c.contains("medseg") || !c.at("medseg").is_object()) return;
  const json& m = c.at("medseg");
  if (m.contains("estimated_peak_bytes") && m.at("estimated_peak_bytes").is_number())
    p.medseg.estimated_peak_bytes = m.at("estimated_peak_bytes").get<int64_t>();
  p.medseg.memory_model = m.value("memory_model", "");
  p.medseg.memory = m.value("memory", json(nullptr));
}

}  // namespace

ConfigurationPlan configuration_from_json(const json& c, const std::string& name, const std::string& file) {
  const auto r = JsonObjectReader::scoped(c, file, concat("configuration '", name, "'"), "the configuration");
  ConfigurationPlan p;
  p.name = name;
  p.raw = c;
  read_patch_settings(p, r);
  read_resampling(p, r);
  p.batch_dice = r.get<bool>("batch_dice");
  read_cascade(p, r);
  read_network(p, r);
  read_medseg_hints(p, c);
  return p;
}

Plans plans_from_json(const json& j, const std::string& source) {
  const auto r = JsonObjectReader::scoped(j, source, "", "plans");
  Plans p;
  p.raw = j;
  p.source = source;
  p.dataset_name = r.get<std::string>("dataset_name");
  check_plans_name(r, p.dataset_name, "dataset_name");
  p.plans_name = r.get<std::string>("plans_name");
  check_plans_name(r, p.plans_name, "plans_name");
  p.original_median_spacing_after_transp = r.get<std::vector<double>>("original_median_spacing_after_transp");
  p.original_median_shape_after_transp = r.get<std::vector<int>>("original_median_shape_after_transp");
  p.image_reader_writer = r.get<std::string>("image_reader_writer");
  p.transpose_forward = r.get<std::vector<int>>("transpose_forward");
  p.transpose_backward = r.get<std::vector<int>>("transpose_backward");
  check_transpose(p.transpose_forward, p.transpose_backward, r);
  p.experiment_planner_used = r.get_or<std::string>("experiment_planner_used", "");
  p.label_manager = r.get_or<std::string>("label_manager", "LabelManager");
  p.foreground_intensity_properties_per_channel =
      j.value("foreground_intensity_properties_per_channel", json::object());
  const json& configs = r.at("configurations");
  r.check(configs.is_object() && !configs.empty(), "'configurations' must be a non-empty object");
  const auto configs_reader = JsonObjectReader::scoped(configs, source, "", "'configurations'");
  for (const auto& [name, raw] : configs.items()) {
    check_plans_name(r, name, "configuration name");  // part of the model folder's name
    std::vector<std::string> visited;
    json c = resolve_configuration(configs_reader, name, visited);
    if (!c.contains("architecture") && c.contains("UNet_class_name"))
      c = convert_legacy_configuration(c, source, concat("configuration '", name, "'"));
    p.configurations.emplace(name, configuration_from_json(c, name, source));
  }
  return p;
}

Plans load_plans(const std::string& path) { return plans_from_json(read_json(path), path); }

std::vector<std::string> Plans::configuration_names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : configurations) out.push_back(k);
  return out;
}

const ConfigurationPlan& Plans::configuration(const std::string& name) const {
  auto it = configurations.find(name);
  if (it != configurations.end()) return it->second;
  std::string names;
  for (const auto& [k, v] : configurations) names += (names.empty() ? "" : ", ") + k;
  throw Error(concat(source.empty() ? plans_name : source, ": configuration '", name,
                     "' does not exist (available: ", names, ")"));
}

namespace {

json architecture_to_json(const ArchitecturePlan& a) {
  json j = a.raw.is_object() ? a.raw : json::object();
  set_if_changed(j, "network_class_name", a.network_class_name);
  json& k = j["arch_kwargs"];
  if (!k.is_object()) k = json::object();
  if (a.swin) {
    const SwinPlan& s = *a.swin;
    set_if_changed(k, "feature_size", s.feature_size);
    set_if_changed(k, "depths", s.depths);
    set_if_changed(k, "num_heads", s.num_heads);
    set_if_changed(k, "window_size", s.window_size);
    set_if_changed(k, "use_v2", s.use_v2);
    set_if_changed(k, "use_checkpoint", s.use_checkpoint);
    set_if_changed(k, "normalize", s.normalize);
    set_if_changed(k, "drop_rate", s.drop_rate);
    set_if_changed(k, "attn_drop_rate", s.attn_drop_rate);
    set_if_changed(k, "dropout_path_rate", s.dropout_path_rate);
    return j;
  }
  set_if_changed(k, "n_stages", a.n_stages);
  set_if_changed(k, "features_per_stage", a.features_per_stage);
  set_if_changed(k, "conv_op", a.conv_op);
  set_if_changed(k, "kernel_sizes", a.kernel_sizes);
  set_if_changed(k, "strides", a.strides);
  if (!a.n_conv_per_stage.empty()) set_if_changed(k, "n_conv_per_stage", a.n_conv_per_stage);
  if (!a.n_blocks_per_stage.empty()) set_if_changed(k, "n_blocks_per_stage", a.n_blocks_per_stage);
  if (!a.n_conv_per_stage_decoder.empty()) set_if_changed(k, "n_conv_per_stage_decoder", a.n_conv_per_stage_decoder);
  set_if_changed(k, "conv_bias", a.conv_bias);
  return j;
}

}  // namespace

json configuration_to_json(const ConfigurationPlan& p) {
  json j = p.raw.is_object() ? p.raw : json::object();
  set_if_changed(j, "data_identifier", p.data_identifier);
  set_if_changed(j, "preprocessor_name", p.preprocessor_name);
  set_if_changed(j, "batch_size", p.batch_size);
  set_if_changed(j, "patch_size", p.patch_size);
  set_if_changed(j, "median_image_size_in_voxels", p.median_image_size_in_voxels);
  set_if_changed(j, "spacing", p.spacing);
  set_if_changed(j, "normalization_schemes", p.normalization_schemes);
  set_if_changed(j, "use_mask_for_norm", p.use_mask_for_norm);
  set_if_changed(j, "resampling_fn_data", p.resampling_fn_data);
  set_if_changed(j, "resampling_fn_seg", p.resampling_fn_seg);
  set_if_changed(j, "resampling_fn_probabilities", p.resampling_fn_probabilities);
  set_if_changed(j, "resampling_fn_data_kwargs", resampling_to_json(p.resampling_fn_data_kwargs));
  set_if_changed(j, "resampling_fn_seg_kwargs", resampling_to_json(p.resampling_fn_seg_kwargs));
  set_if_changed(j, "resampling_fn_probabilities_kwargs", resampling_to_json(p.resampling_fn_probabilities_kwargs));
  set_if_changed(j, "batch_dice", p.batch_dice);
  if (!p.previous_stage.empty()) set_if_changed(j, "previous_stage", p.previous_stage);
  if (p.next_stage.size() == 1 && !(j.contains("next_stage") && j.at("next_stage").is_array()))
    set_if_changed(j, "next_stage", p.next_stage[0]);
  else if (!p.next_stage.empty())
    set_if_changed(j, "next_stage", p.next_stage);
  set_if_changed(j, "architecture", architecture_to_json(p.architecture));
  if (p.medseg.estimated_peak_bytes || !p.medseg.memory_model.empty()) {
    json& m = j["medseg"];
    if (!m.is_object()) m = json::object();
    if (p.medseg.estimated_peak_bytes) set_if_changed(m, "estimated_peak_bytes", *p.medseg.estimated_peak_bytes);
    if (!p.medseg.memory_model.empty()) set_if_changed(m, "memory_model", p.medseg.memory_model);
    if (!p.medseg.memory.is_null()) set_if_changed(m, "memory", p.medseg.memory);
  }
  return j;
}

json plans_to_json(const Plans& p) {
  json j = p.raw.is_object() ? p.raw : json::object();
  set_if_changed(j, "dataset_name", p.dataset_name);
  set_if_changed(j, "plans_name", p.plans_name);
  set_if_changed(j, "original_median_spacing_after_transp", p.original_median_spacing_after_transp);
  set_if_changed(j, "original_median_shape_after_transp", p.original_median_shape_after_transp);
  set_if_changed(j, "image_reader_writer", p.image_reader_writer);
  set_if_changed(j, "transpose_forward", p.transpose_forward);
  set_if_changed(j, "transpose_backward", p.transpose_backward);
  if (!p.experiment_planner_used.empty()) set_if_changed(j, "experiment_planner_used", p.experiment_planner_used);
  set_if_changed(j, "label_manager", p.label_manager);
  set_if_changed(j, "foreground_intensity_properties_per_channel", p.foreground_intensity_properties_per_channel);
  json configs = json::object();
  for (const auto& [name, c] : p.configurations) {
    json full = configuration_to_json(c);
    if (c.inherits_from.empty() || !p.configurations.count(c.inherits_from)) {
      configs[name] = full;
      continue;
    }
    // Keep only what differs from the resolved parent, like a hand-written nnU-Net child config.
    // Keys the file spelled out for this child stay, even when equal to the parent's.
    const json parent = configuration_to_json(p.configurations.at(c.inherits_from));
    const json* own = nullptr;
    if (p.raw.contains("configurations") && p.raw.at("configurations").contains(name))
      own = &p.raw.at("configurations").at(name);
    json diff = json::object();
    for (const auto& [k, v] : full.items())
      if (!parent.contains(k) || parent.at(k) != v || (own && own->contains(k))) diff[k] = v;
    diff["inherits_from"] = c.inherits_from;
    configs[name] = diff;
  }
  j["configurations"] = configs;
  return j;
}

}  // namespace medseg::planning
