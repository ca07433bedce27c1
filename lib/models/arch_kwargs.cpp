#include "models/arch_kwargs.h"

#include "core/error.h"

namespace medseg::models {
namespace {

using nlohmann::json;

std::string last_component(const std::string& s) {
  const auto p = s.rfind('.');
  return p == std::string::npos ? s : s.substr(p + 1);
}

const json& need(const json& j, const std::string& key) {
  if (!j.contains(key)) throw Error("network: arch_kwargs lacks '" + key + "'");
  return j.at(key);
}

template <class T>
T get_as(const json& v, const std::string& key) {
  try {
    return v.get<T>();
  } catch (const std::exception&) {
    throw Error("network: arch_kwargs." + key + " has the wrong type: " + v.dump());
  }
}

// An int (same for every stage) or one int per stage.
std::vector<int64_t> per_stage_ints(const json& j, const std::string& key, size_t n) {
  const json& v = need(j, key);
  if (v.is_number_integer()) return std::vector<int64_t>(n, v.get<int64_t>());
  return get_as<std::vector<int64_t>>(v, key);
}

// An int, a list of ints (one per stage) or a list of per-axis lists.
std::vector<Shape> per_stage_shapes(const json& j, const std::string& key, size_t n) {
  const json& v = need(j, key);
  if (v.is_number_integer()) return std::vector<Shape>(n, Shape{v.get<int64_t>()});
  if (!v.is_array()) throw Error("network: arch_kwargs." + key + " must be an int or a list");
  std::vector<Shape> out;
  for (const auto& e : v) {
    if (e.is_number_integer()) out.push_back({e.get<int64_t>()});
    else out.push_back(get_as<Shape>(e, key));
  }
  return out;
}

void at_least_one(const std::vector<int64_t>& v, const std::string& key) {
  for (int64_t x : v)
    if (x < 1) throw Error("network: arch_kwargs." + key + " holds " + std::to_string(x) + " (must be >= 1)");
}

bool is_null_or_missing(const json& j, const std::string& key) { return !j.contains(key) || j.at(key).is_null(); }

}  // namespace

int dims_from_conv_op(const std::string& conv_op) {
  const std::string c = last_component(conv_op);
  if (c == "Conv3d") return 3;
  if (c == "Conv2d") return 2;
  throw Error("network: unsupported conv_op '" + conv_op + "' (expected Conv2d or Conv3d)");
}

UNetOptions unet_options_from_json(const json& kw, int64_t in_channels, int64_t num_classes, bool residual) {
  if (!kw.is_object()) throw Error("network: arch_kwargs must be an object");
  std::vector<int64_t> features;
  const json& fv = need(kw, "features_per_stage");
  const size_t n_stages =
      kw.contains("n_stages") ? get_as<size_t>(kw.at("n_stages"), "n_stages") : (fv.is_array() ? fv.size() : 0);
  if (n_stages == 0) throw Error("network: arch_kwargs needs n_stages or a features_per_stage list");
  features = fv.is_number_integer() ? std::vector<int64_t>(n_stages, fv.get<int64_t>())
                                    : get_as<std::vector<int64_t>>(fv, "features_per_stage");
  if (features.size() != n_stages)
    throw Error("network: arch_kwargs.features_per_stage has " + std::to_string(features.size()) +
                " entries, n_stages is " + std::to_string(n_stages));

  UNetOptions o(in_channels, num_classes, features);
  o.spatial_dims(dims_from_conv_op(get_as<std::string>(need(kw, "conv_op"), "conv_op")));
  o.kernel_sizes(per_stage_shapes(kw, "kernel_sizes", n_stages));
  o.strides(per_stage_shapes(kw, "strides", n_stages));
  if (residual) o.n_blocks_per_stage(per_stage_ints(kw, "n_blocks_per_stage", n_stages));
  else o.n_conv_per_stage(per_stage_ints(kw, "n_conv_per_stage", n_stages));
  o.n_conv_per_stage_decoder(per_stage_ints(kw, "n_conv_per_stage_decoder", n_stages - 1));
  o.conv_bias(kw.contains("conv_bias") ? get_as<bool>(kw.at("conv_bias"), "conv_bias") : false);
  // Plans files are range-checked by planning::architecture_from_json; this guards direct callers.
  at_least_one(features, "features_per_stage");
  for (const auto& k : o.kernel_sizes()) at_least_one(k, "kernel_sizes");
  for (const auto& st : o.strides()) at_least_one(st, "strides");
  at_least_one(residual ? o.n_blocks_per_stage() : o.n_conv_per_stage(), residual ? "n_blocks_per_stage" : "n_conv_per_stage");
  at_least_one(o.n_conv_per_stage_decoder(), "n_conv_per_stage_decoder");

  // Norm: Python defaults apply when kwargs are absent (InstanceNorm affine=False, BatchNorm affine=True).
  if (is_null_or_missing(kw, "norm_op")) {
    o.norm(NormKind::kNone);
  } else {
    const std::string n = last_component(get_as<std::string>(kw.at("norm_op"), "norm_op"));
    if (n.rfind("InstanceNorm", 0) == 0) o.norm(NormKind::kInstance).norm_affine(false);
    else if (n.rfind("BatchNorm", 0) == 0) o.norm(NormKind::kBatch).norm_affine(true);
    else throw Error("network: unsupported norm_op '" + n + "'");
    const json nk = is_null_or_missing(kw, "norm_op_kwargs") ? json::object() : kw.at("norm_op_kwargs");
    if (nk.contains("eps")) o.norm_eps(get_as<double>(nk.at("eps"), "norm_op_kwargs.eps"));
    if (nk.contains("affine")) o.norm_affine(get_as<bool>(nk.at("affine"), "norm_op_kwargs.affine"));
  }
  if (!is_null_or_missing(kw, "dropout_op")) {
    const json dk = is_null_or_missing(kw, "dropout_op_kwargs") ? json::object() : kw.at("dropout_op_kwargs");
    o.dropout_p(dk.contains("p") ? get_as<double>(dk.at("p"), "dropout_op_kwargs.p") : 0.5);
  }
  if (is_null_or_missing(kw, "nonlin")) {
    o.nonlin(NonlinKind::kNone);
  } else {
    const std::string n = last_component(get_as<std::string>(kw.at("nonlin"), "nonlin"));
    if (n == "LeakyReLU") o.nonlin(NonlinKind::kLeakyReLU);
    else if (n == "ReLU") o.nonlin(NonlinKind::kReLU);
    else throw Error("network: unsupported nonlin '" + n + "'");
    const json nk = is_null_or_missing(kw, "nonlin_kwargs") ? json::object() : kw.at("nonlin_kwargs");
    if (nk.contains("negative_slope")) o.negative_slope(get_as<double>(nk.at("negative_slope"), "nonlin_kwargs.negative_slope"));
  }
  if (!is_null_or_missing(kw, "block") && last_component(kw.at("block").get<std::string>()) != "BasicBlockD")
    throw Error("network: only BasicBlockD residual blocks are supported, got " + kw.at("block").dump());
  if (!is_null_or_missing(kw, "stem_channels") && kw.at("stem_channels").get<int64_t>() != features[0])
    throw Error("network: stem_channels other than features_per_stage[0] are not supported");
  if (kw.contains("nonlin_first") && kw.at("nonlin_first").is_boolean() && kw.at("nonlin_first").get<bool>())
    throw Error("network: nonlin_first=true is not supported");
  return o;
}

}  // namespace medseg::models
