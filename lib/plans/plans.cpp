#include "plans/plans.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/json_object_reader.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "plans/normalization_names.h"
#include "plans/plan_limits.h"

namespace medseg::planning {
namespace {

// Context for error messages: "<file>: configuration '3d_fullres': key 'patch_size' ...".
struct Where {
  std::string file, scope;
  [[noreturn]] void fail(const std::string& problem) const {
    throw FileError(file, (scope.empty() ? "" : scope + ": ") + problem);
  }
  const json& at(const json& j, const std::string& key) const {
    if (!j.is_object() || !j.contains(key)) fail("missing key '" + key + "'");
    return j.at(key);
  }
  // "key 'batch_size'" for fail() and range(), which put the scope in front themselves.
  static std::string key(const std::string& k) { return "key '" + k + "'"; }
  // "configuration '3d_fullres': key 'batch_size'", for json_as, which does not.
  std::string scoped(const std::string& what) const { return (scope.empty() ? "" : scope + ": ") + what; }
  void range(int64_t v, int64_t lo, int64_t hi, const std::string& what) const {
    if (v < lo || v > hi) fail(concat(what, " is ", v, " (must be ", lo, "..", hi, ")"));
  }
  void name(const std::string& value, const std::string& what) const {
    check_path_component(value, (scope.empty() ? "" : scope + ": ") + what, file);
  }
};

template <class T>
T get(const json& j, const std::string& key, const Where& w) {
  return json_as<T>(w.at(j, key), w.scoped(w.key(key)), w.file);
}

template <class T>
T get_or(const json& j, const std::string& key, T fallback, const Where& w) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return fallback;
  return get<T>(j, key, w);
}

// Lists of per-stage rows; a scalar entry (allowed by DNA) is expanded to `dim` copies.
std::vector<std::vector<int>> get_rows(const json& j, const std::string& key, int dim, int n, const Where& w) {
  const json& v = w.at(j, key);
  std::vector<std::vector<int>> rows;
  if (v.is_number())
    return std::vector<std::vector<int>>(n, std::vector<int>(dim, json_as<int>(v, w.scoped(w.key(key)), w.file)));
  if (!v.is_array()) w.fail("key '" + key + "' must be a list");
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& r = v[i];
    const std::string what = w.scoped(concat(w.key(key), "[", i, "]"));
    if (r.is_number()) {
      rows.emplace_back(dim, json_as<int>(r, what, w.file));
    } else if (r.is_array() && static_cast<int>(r.size()) == dim) {
      rows.push_back(json_as<std::vector<int>>(r, what, w.file));
    } else {
      w.fail(concat("key '", key, "' rows must have ", dim, " entries"));
    }
  }
  if (static_cast<int>(rows.size()) != n)
    w.fail(concat("key '", key, "' has ", rows.size(), " rows, expected n_stages=", n));
  return rows;
}

std::vector<int> get_per_stage(const json& j, const std::string& key, int n, const Where& w) {
  const json& v = w.at(j, key);
  if (v.is_number()) return std::vector<int>(n, json_as<int>(v, w.scoped(w.key(key)), w.file));
  auto out = get<std::vector<int>>(j, key, w);
  if (static_cast<int>(out.size()) != n) w.fail(concat("key '", key, "' has ", out.size(), " entries, expected ", n));
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

ResamplingKwargs resampling_from_json(const json& j, const Where& w) {
  ResamplingKwargs r;
  if (!j.is_object()) w.fail("resampling kwargs must be an object");
  r.raw = j;
  r.is_seg = get_or<bool>(j, "is_seg", false, w);
  r.order = get_or<int>(j, "order", r.is_seg ? 1 : 3, w);
  r.order_z = get_or<int>(j, "order_z", 0, w);
  if (j.contains("force_separate_z") && !j.at("force_separate_z").is_null())
    r.force_separate_z = get<bool>(j, "force_separate_z", w);
  r.separate_z_anisotropy_threshold =
      get_or<double>(j, "separate_z_anisotropy_threshold", r.separate_z_anisotropy_threshold, w);
  r.memefficient_seg_resampling = get_or<bool>(j, "memefficient_seg_resampling", false, w);
  r.mode = get_or<std::string>(j, "mode", r.mode, w);
  r.aniso_axis_mode = get_or<std::string>(j, "aniso_axis_mode", r.aniso_axis_mode, w);
  w.range(r.order, 0, 5, w.key("order"));
  w.range(r.order_z, 0, 5, w.key("order_z"));
  if (!(r.separate_z_anisotropy_threshold > 0) || !std::isfinite(r.separate_z_anisotropy_threshold))
    w.fail("separate_z_anisotropy_threshold must be a positive number");
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

SwinPlan swin_from_json(const json& k, const Where& w) {
  SwinPlan s;
  s.feature_size = get_or<int>(k, "feature_size", s.feature_size, w);
  s.depths = get_or<std::vector<int>>(k, "depths", s.depths, w);
  s.num_heads = get_or<std::vector<int>>(k, "num_heads", s.num_heads, w);
  s.window_size = get_or<int>(k, "window_size", s.window_size, w);
  s.patch_size = get_or<int>(k, "patch_size", s.patch_size, w);
  s.use_v2 = get_or<bool>(k, "use_v2", s.use_v2, w);
  s.use_checkpoint = get_or<bool>(k, "use_checkpoint", s.use_checkpoint, w);
  s.normalize = get_or<bool>(k, "normalize", s.normalize, w);
  s.drop_rate = get_or<double>(k, "drop_rate", s.drop_rate, w);
  s.attn_drop_rate = get_or<double>(k, "attn_drop_rate", s.attn_drop_rate, w);
  s.dropout_path_rate = get_or<double>(k, "dropout_path_rate", s.dropout_path_rate, w);
  if (s.feature_size <= 0 || s.feature_size % 12 != 0)
    w.fail("SwinUNETR feature_size must be a positive multiple of 12");
  w.range(s.feature_size, 12, PlanLimits::max_features, w.key("feature_size"));
  if (s.depths.size() != 4 || s.num_heads.size() != 4) w.fail("SwinUNETR depths and num_heads need 4 entries");
  for (std::size_t i = 0; i < 4; ++i) {
    w.range(s.depths[i], 1, PlanLimits::max_convs_per_stage, concat(w.key("depths"), "[", i, "]"));
    w.range(s.num_heads[i], 1, s.feature_size << i, concat(w.key("num_heads"), "[", i, "]"));
    if ((s.feature_size << i) % s.num_heads[i] != 0)
      w.fail(concat(w.key("num_heads"), "[", i, "] is ", s.num_heads[i], ", which does not divide the stage width ",
                    s.feature_size << i));
  }
  w.range(s.window_size, 1, 64, w.key("window_size"));
  if (s.patch_size != 2) w.fail(concat(w.key("patch_size"), " is ", s.patch_size, " (only 2 is supported)"));
  const std::pair<const char*, double> rates[] = {
      {"drop_rate", s.drop_rate}, {"attn_drop_rate", s.attn_drop_rate}, {"dropout_path_rate", s.dropout_path_rate}};
  for (const auto& [key, r] : rates)
    if (!(r >= 0 && r < 1)) w.fail(w.key(key) + " is " + json(r).dump() + " (must be in [0, 1))");
  return s;
}

PrimusPlan primus_from_json(const json& k, const Where& w) {
  PrimusPlan p;
  p.embed_dim = get<int>(k, "embed_dim", w);
  p.eva_depth = get_or<int>(k, "eva_depth", p.eva_depth, w);
  p.eva_numheads = get_or<int>(k, "eva_numheads", p.eva_numheads, w);
  p.patch_embed_size = get_or<std::vector<int>>(k, "patch_embed_size", p.patch_embed_size, w);
  if (k.contains("input_shape") && !k.at("input_shape").is_null())
    p.input_shape = get<std::vector<int>>(k, "input_shape", w);
  p.mlp_ratio = get_or<double>(k, "mlp_ratio", p.mlp_ratio, w);
  p.drop_path_rate = get_or<double>(k, "drop_path_rate", p.drop_path_rate, w);
  if (k.contains("init_values") && !k.at("init_values").is_null()) p.init_values = get<double>(k, "init_values", w);
  p.scale_attn_inner = get_or<bool>(k, "scale_attn_inner", p.scale_attn_inner, w);
  p.use_rot_pos_emb = get_or<bool>(k, "use_rot_pos_emb", p.use_rot_pos_emb, w);
  p.use_abs_pos_embed = get_or<bool>(k, "use_abs_pos_embed", p.use_abs_pos_embed, w);
  p.num_register_tokens = get_or<int>(k, "num_register_tokens", p.num_register_tokens, w);
  w.range(p.embed_dim, 1, PlanLimits::max_features, w.key("embed_dim"));
  w.range(p.eva_depth, 1, 64, w.key("eva_depth"));
  w.range(p.eva_numheads, 1, p.embed_dim, w.key("eva_numheads"));
  w.range(p.num_register_tokens, 0, 1024, w.key("num_register_tokens"));
  if (!(p.mlp_ratio > 0 && p.mlp_ratio <= 64))
    w.fail(w.key("mlp_ratio") + " is " + json(p.mlp_ratio).dump() + " (must be in (0, 64])");
  // eva.py's rule for 3D tokens: the rotary embedding takes head_dim / 1.5, a whole multiple of 4.
  if (p.embed_dim % p.eva_numheads != 0 || (p.embed_dim / p.eva_numheads) % 6 != 0)
    w.fail(concat(w.key("embed_dim"), " / ", w.key("eva_numheads"), " is ", p.embed_dim, " / ", p.eva_numheads,
                  " (each head must be a whole multiple of 6 wide for the 3D rotary embedding)"));
  if (p.patch_embed_size.size() != 3) w.fail(w.key("patch_embed_size") + " needs 3 entries (Primus is 3D)");
  for (std::size_t i = 0; i < 3; ++i) {
    const int e = p.patch_embed_size[i];
    if (e < 1 || e > 64 || (e & (e - 1)) != 0)
      w.fail(concat(w.key("patch_embed_size"), "[", i, "] is ", e, " (must be a power of two up to 64)"));
  }
  if (!(p.drop_path_rate >= 0 && p.drop_path_rate < 1))
    w.fail(w.key("drop_path_rate") + " is " + json(p.drop_path_rate).dump() + " (must be in [0, 1))");
  return p;
}

// nnU-Net before 2.4 stored the U-Net as flat keys; rebuild the "architecture" block from them
// the way nnU-Net's ConfigurationManager does.
json convert_legacy_configuration(json c, const Where& w) {
  const auto cls = get<std::string>(c, "UNet_class_name", w);
  std::string full;
  if (cls == "PlainConvUNet")
    full = "dynamic_network_architectures.architectures.unet.PlainConvUNet";
  else if (cls == "ResidualEncoderUNet")
    full = "dynamic_network_architectures.architectures.residual_unet.ResidualEncoderUNet";
  else
    w.fail("unknown legacy UNet_class_name '" + cls + "'");
  const auto enc = get<std::vector<int>>(c, "n_conv_per_stage_encoder", w);
  const int n = static_cast<int>(enc.size());
  const int dim = static_cast<int>(get<std::vector<int>>(c, "patch_size", w).size());
  const int base = get<int>(c, "UNet_base_num_features", w), maxf = get<int>(c, "unet_max_num_features", w);
  std::vector<int> feats;
  for (int i = 0; i < n; ++i) feats.push_back(std::min(base << i, maxf));
  const std::string d = std::to_string(dim);
  json k = {{"n_stages", n},
            {"features_per_stage", feats},
            {"conv_op", "torch.nn.modules.conv.Conv" + d + "d"},
            {"kernel_sizes", c.at("conv_kernel_sizes")},
            {"strides", c.at("pool_op_kernel_sizes")},
            {cls == "PlainConvUNet" ? "n_conv_per_stage" : "n_blocks_per_stage", enc},
            {"n_conv_per_stage_decoder", c.at("n_conv_per_stage_decoder")},
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

json resolve_configuration(const json& configs, const std::string& name, std::vector<std::string>& visited,
                           const Where& w) {
  if (!configs.contains(name)) {
    std::string names;
    for (const auto& [k, v] : configs.items()) names += (names.empty() ? "" : ", ") + k;
    w.fail("configuration '" + name + "' does not exist (available: " + names + ")");
  }
  json c = configs.at(name);
  if (!c.is_object()) w.fail("configuration '" + name + "' is not an object");
  if (!c.contains("inherits_from")) return c;
  const auto parent = get<std::string>(c, "inherits_from", Where{w.file, "configuration '" + name + "'"});
  visited.push_back(name);
  if (std::find(visited.begin(), visited.end(), parent) != visited.end())
    w.fail("circular inherits_from chain at configuration '" + name + "' -> '" + parent + "'");
  json base = resolve_configuration(configs, parent, visited, w);
  base.update(c);  // shallow, child keys win (as in nnU-Net)
  return base;
}

// Every per-stage value of a U-Net in its range (a stride of 0 or 10^6 features fail here, naming the
// key, instead of deep in torch or in a huge allocation).
void check_unet_ranges(const ArchitecturePlan& a, const Where& w) {
  const auto each = [&](const std::vector<int>& v, const std::string& what, int lo, int hi) {
    for (std::size_t i = 0; i < v.size(); ++i) w.range(v[i], lo, hi, concat(what, "[", i, "]"));
  };
  each(a.features_per_stage, w.key("features_per_stage"), 1, PlanLimits::max_features);
  each(a.n_conv_per_stage, w.key("n_conv_per_stage"), 1, PlanLimits::max_convs_per_stage);
  each(a.n_blocks_per_stage, w.key("n_blocks_per_stage"), 1, PlanLimits::max_convs_per_stage);
  each(a.n_conv_per_stage_decoder, w.key("n_conv_per_stage_decoder"), 1, PlanLimits::max_convs_per_stage);
  for (int s = 0; s < a.n_stages; ++s) {
    const std::string at = concat("[", s, "]");
    each(a.strides[static_cast<std::size_t>(s)], w.key("strides") + at, 1, PlanLimits::max_stride);
    each(a.kernel_sizes[static_cast<std::size_t>(s)], w.key("kernel_sizes") + at, 1, PlanLimits::max_kernel_size);
    for (std::size_t d = 0; d < a.kernel_sizes[static_cast<std::size_t>(s)].size(); ++d)
      if (a.kernel_sizes[static_cast<std::size_t>(s)][d] % 2 == 0)
        w.fail(concat(w.key("kernel_sizes"), at, "[", d, "] is ", a.kernel_sizes[static_cast<std::size_t>(s)][d],
                      " (must be odd)"));
  }
  if (!(a.norm_eps > 0)) w.fail(w.key("norm_op_kwargs.eps") + " is " + json(a.norm_eps).dump() + " (must be > 0)");
}

// transpose_forward a permutation of 0..2 (duplicates would drop an axis), transpose_backward its inverse.
void check_transpose(const std::vector<int>& fwd, const std::vector<int>& bwd, const Where& w) {
  const auto is_perm = [](const std::vector<int>& v) {
    std::vector<int> s = v;
    std::sort(s.begin(), s.end());
    return s == std::vector<int>{0, 1, 2};
  };
  if (!is_perm(fwd))
    w.fail(w.key("transpose_forward") + " is " + json(fwd).dump() + " (must be a permutation of [0, 1, 2])");
  if (!is_perm(bwd) || fwd[static_cast<std::size_t>(bwd[0])] != 0 || fwd[static_cast<std::size_t>(bwd[1])] != 1 ||
      fwd[static_cast<std::size_t>(bwd[2])] != 2)
    w.fail(w.key("transpose_backward") + " is " + json(bwd).dump() + " (must be the inverse of transpose_forward " +
           json(fwd).dump() + ")");
}

}  // namespace

// A configuration's patch and batch against its network: 1..max per value, and each patch axis
// divisible by the network's total stride on that axis (else the decoder cannot meet the skips).
static void check_patch_and_batch(const std::vector<int>& patch, int batch, const ArchitecturePlan& arch,
                                  const std::string& source, const std::string& scope) {
  const Where w{source, scope};
  w.range(batch, 1, PlanLimits::max_batch_size, w.key("batch_size"));
  for (std::size_t i = 0; i < patch.size(); ++i)
    w.range(patch[i], 1, PlanLimits::max_patch_edge, concat(w.key("patch_size"), "[", i, "]"));
  if (patch.size() != static_cast<std::size_t>(arch.dim)) return;  // the caller reports the rank mismatch
  for (std::size_t i = 0; i < patch.size(); ++i) {
    int64_t total = 1;
    if (arch.swin)
      total = 32;  // patch embedding (2) and four patch mergings
    else if (arch.primus)
      total = arch.primus->patch_embed_size[i];  // the tokens
    else
      for (const auto& s : arch.strides) total = std::min<int64_t>(total * s[i], int64_t{1} << 40);
    if (patch[i] % total != 0)
      w.fail(concat(w.key("patch_size"), "[", i, "] is ", patch[i], ", not divisible by the network's total stride ",
                    total, " on that axis"));
  }
}

json resolve_configuration(const json& configurations, const std::string& name, const std::string& source) {
  std::vector<std::string> visited;
  return resolve_configuration(configurations, name, visited, Where{source, ""});
}

ArchitecturePlan architecture_from_json(const json& arch, const std::string& source, const std::string& scope) {
  Where w{source, scope};
  ArchitecturePlan a;
  if (!arch.is_object()) w.fail("'architecture' must be an object");
  a.raw = arch;
  a.network_class_name = get<std::string>(arch, "network_class_name", w);
  a.short_name = after_last_dot(a.network_class_name);
  const json& k = w.at(arch, "arch_kwargs");
  if (arch.contains("_kw_requires_import"))
    a.kw_requires_import = get<std::vector<std::string>>(arch, "_kw_requires_import", w);
  if (a.short_name == "Primus") {
    a.primus = primus_from_json(k, w);
    a.dim = 3;
    a.n_stages = 1;
    return a;
  }
  if (a.short_name.rfind("Primus", 0) == 0)
    w.fail("network_class_name " + a.network_class_name +
           ": of dynamic-network-architectures' Primus classes only Primus itself is built (not the V2/V3 patch "
           "embeddings or the preset subclasses; name Primus with embed_dim, eva_depth and eva_numheads)");
  if (a.short_name == "SwinUNETR") {
    a.swin = swin_from_json(k, w);
    a.dim = get_or<int>(k, "spatial_dims", 3, w);
    if (a.dim != 2 && a.dim != 3) w.fail(concat(w.key("spatial_dims"), " is ", a.dim, " (must be 2 or 3)"));
    a.n_stages = 5;  // the input resolution plus four Swin stages (strides 2,4,8,16,32)
    return a;
  }
  a.conv_op = get<std::string>(k, "conv_op", w);
  a.dim = dim_of_conv_op(a.conv_op);
  a.n_stages = get<int>(k, "n_stages", w);
  w.range(a.n_stages, 1, PlanLimits::max_stages, w.key("n_stages"));
  if (a.dim == 0) {  // custom conv op: take the rank from the kernel sizes
    const json& ks = w.at(k, "kernel_sizes");
    a.dim = (ks.is_array() && !ks.empty() && ks[0].is_array()) ? static_cast<int>(ks[0].size()) : 3;
  }
  a.features_per_stage = get_per_stage(k, "features_per_stage", a.n_stages, w);
  a.kernel_sizes = get_rows(k, "kernel_sizes", a.dim, a.n_stages, w);
  a.strides = get_rows(k, "strides", a.dim, a.n_stages, w);
  if (k.contains("n_conv_per_stage")) a.n_conv_per_stage = get_per_stage(k, "n_conv_per_stage", a.n_stages, w);
  if (k.contains("n_blocks_per_stage")) a.n_blocks_per_stage = get_per_stage(k, "n_blocks_per_stage", a.n_stages, w);
  if (a.n_conv_per_stage.empty() && a.n_blocks_per_stage.empty())
    w.fail("arch_kwargs needs n_conv_per_stage or n_blocks_per_stage");
  if (k.contains("n_conv_per_stage_decoder"))
    a.n_conv_per_stage_decoder = get_per_stage(k, "n_conv_per_stage_decoder", a.n_stages - 1, w);
  a.conv_bias = get_or<bool>(k, "conv_bias", false, w);
  a.norm_op = get_or<std::string>(k, "norm_op", "", w);
  a.dropout_op = get_or<std::string>(k, "dropout_op", "", w);
  a.nonlin = get_or<std::string>(k, "nonlin", "", w);
  a.norm_op_kwargs = k.value("norm_op_kwargs", json(nullptr));
  a.dropout_op_kwargs = k.value("dropout_op_kwargs", json(nullptr));
  a.nonlin_kwargs = k.value("nonlin_kwargs", json(nullptr));
  a.norm_eps = get_or<double>(a.norm_op_kwargs, "eps", 1e-5, w);
  const bool batch_norm = after_last_dot(a.norm_op).rfind("BatchNorm", 0) == 0;
  a.norm_affine = get_or<bool>(a.norm_op_kwargs, "affine", batch_norm, w);  // torch's defaults
  a.nonlin_inplace = get_or<bool>(a.nonlin_kwargs, "inplace", false, w);
  a.nonlin_negative_slope = get_or<double>(a.nonlin_kwargs, "negative_slope", 0.01, w);
  if (!a.dropout_op.empty()) a.dropout_p = get_or<double>(a.dropout_op_kwargs, "p", 0.5, w);
  a.block = get_or<std::string>(k, "block", "", w);
  if (k.contains("stem_channels") && !k.at("stem_channels").is_null())
    a.stem_channels = get<int>(k, "stem_channels", w);
  a.nonlin_first = get_or<bool>(k, "nonlin_first", false, w);
  check_unet_ranges(a, w);
  return a;
}

ConfigurationPlan configuration_from_json(const json& c, const std::string& name, const std::string& file) {
  Where w{file, "configuration '" + name + "'"};
  ConfigurationPlan p;
  p.name = name;
  p.raw = c;
  p.data_identifier = get<std::string>(c, "data_identifier", w);
  w.name(p.data_identifier, "data_identifier");  // preprocessing writes into <preprocessed>/<data_identifier>/
  p.preprocessor_name = get<std::string>(c, "preprocessor_name", w);
  p.batch_size = get<int>(c, "batch_size", w);
  p.patch_size = get<std::vector<int>>(c, "patch_size", w);
  if (p.patch_size.size() != 2 && p.patch_size.size() != 3) w.fail("patch_size must have 2 or 3 entries");
  p.median_image_size_in_voxels = get<std::vector<double>>(c, "median_image_size_in_voxels", w);
  p.spacing = get<std::vector<double>>(c, "spacing", w);
  if (p.spacing.size() != p.patch_size.size()) w.fail("spacing and patch_size differ in length");
  for (std::size_t i = 0; i < p.spacing.size(); ++i)
    if (!(p.spacing[i] > 0))
      w.fail(concat(w.key("spacing"), "[", i, "] is ", json(p.spacing[i]).dump(), " (must be > 0)"));
  p.normalization_schemes = get<std::vector<std::string>>(c, "normalization_schemes", w);
  for (std::size_t i = 0; i < p.normalization_schemes.size(); ++i)
    if (!normalization_scheme(p.normalization_schemes[i]))
      w.fail(concat(w.key("normalization_schemes"), "[", i, "] '", p.normalization_schemes[i],
                    "' is not a normalization scheme (known: ", known_normalization_names(), ")"));
  p.use_mask_for_norm = get<std::vector<bool>>(c, "use_mask_for_norm", w);
  if (p.use_mask_for_norm.size() != p.normalization_schemes.size())
    w.fail("use_mask_for_norm and normalization_schemes differ in length");
  p.resampling_fn_data = get<std::string>(c, "resampling_fn_data", w);
  p.resampling_fn_seg = get<std::string>(c, "resampling_fn_seg", w);
  p.resampling_fn_probabilities = get<std::string>(c, "resampling_fn_probabilities", w);
  p.resampling_fn_data_kwargs = resampling_from_json(w.at(c, "resampling_fn_data_kwargs"), w);
  p.resampling_fn_seg_kwargs = resampling_from_json(w.at(c, "resampling_fn_seg_kwargs"), w);
  p.resampling_fn_probabilities_kwargs = resampling_from_json(w.at(c, "resampling_fn_probabilities_kwargs"), w);
  p.batch_dice = get<bool>(c, "batch_dice", w);
  p.inherits_from = get_or<std::string>(c, "inherits_from", "", w);
  p.previous_stage = get_or<std::string>(c, "previous_stage", "", w);
  if (!p.previous_stage.empty())
    w.name(p.previous_stage, "previous_stage");  // OUTPUT/<previous_stage>/, its model folder
  if (c.contains("next_stage") && !c.at("next_stage").is_null()) {
    if (c.at("next_stage").is_string())
      p.next_stage = {c.at("next_stage").get<std::string>()};
    else
      p.next_stage = get<std::vector<std::string>>(c, "next_stage", w);
  }
  for (const auto& next : p.next_stage) w.name(next, "next_stage");  // predicted_next_stage/<next_stage>/
  p.architecture = architecture_from_json(w.at(c, "architecture"), file, w.scope);
  if (p.architecture.dim != p.dim()) w.fail("architecture rank differs from patch_size rank");
  check_patch_and_batch(p.patch_size, p.batch_size, p.architecture, file, w.scope);
  if (p.architecture.primus) {  // Primus is built for tiles of the patch size
    PrimusPlan& primus = *p.architecture.primus;
    if (primus.input_shape.empty()) primus.input_shape = p.patch_size;
    if (primus.input_shape != p.patch_size)
      w.fail("architecture.arch_kwargs.input_shape differs from patch_size (Primus is built for its patch size)");
  }
  if (c.contains("medseg") && c.at("medseg").is_object()) {
    const json& m = c.at("medseg");
    if (m.contains("estimated_peak_bytes") && m.at("estimated_peak_bytes").is_number())
      p.medseg.estimated_peak_bytes = m.at("estimated_peak_bytes").get<int64_t>();
    p.medseg.memory_model = m.value("memory_model", "");
    p.medseg.memory = m.value("memory", json(nullptr));
  }
  return p;
}

Plans plans_from_json(const json& j, const std::string& source) {
  Where w{source, ""};
  if (!j.is_object()) w.fail("plans must be a JSON object");
  Plans p;
  p.raw = j;
  p.source = source;
  p.dataset_name = get<std::string>(j, "dataset_name", w);
  w.name(p.dataset_name, "dataset_name");
  p.plans_name = get<std::string>(j, "plans_name", w);
  w.name(p.plans_name, "plans_name");
  p.original_median_spacing_after_transp = get<std::vector<double>>(j, "original_median_spacing_after_transp", w);
  p.original_median_shape_after_transp = get<std::vector<int>>(j, "original_median_shape_after_transp", w);
  p.image_reader_writer = get<std::string>(j, "image_reader_writer", w);
  p.transpose_forward = get<std::vector<int>>(j, "transpose_forward", w);
  p.transpose_backward = get<std::vector<int>>(j, "transpose_backward", w);
  check_transpose(p.transpose_forward, p.transpose_backward, w);
  p.experiment_planner_used = get_or<std::string>(j, "experiment_planner_used", "", w);
  p.label_manager = get_or<std::string>(j, "label_manager", "LabelManager", w);
  p.foreground_intensity_properties_per_channel =
      j.value("foreground_intensity_properties_per_channel", json::object());
  const json& configs = w.at(j, "configurations");
  if (!configs.is_object() || configs.empty()) w.fail("'configurations' must be a non-empty object");
  for (const auto& [name, raw] : configs.items()) {
    w.name(name, "configuration name");  // part of the model folder's name
    std::vector<std::string> visited;
    json c = resolve_configuration(configs, name, visited, w);
    if (!c.contains("architecture") && c.contains("UNet_class_name"))
      c = convert_legacy_configuration(c, Where{source, "configuration '" + name + "'"});
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
  throw Error((source.empty() ? plans_name : source) + ": configuration '" + name +
              "' does not exist (available: " + names + ")");
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
