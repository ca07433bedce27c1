// One U-Net configuration (PlainConvUNet / ResidualEncoderUNet), the way nnU-Net's
// get_plans_for_configuration does it; with --memory-model bytes the same shrink loop is driven
// by the byte model instead of the feature-map-count proxy.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/numeric.h"
#include "core/strings.h"
#include "planning/feature_map_size.h"
#include "planning/planner_internal.h"
#include "planning/spatial_parallel.h"

namespace medseg::planning::detail {
namespace {

std::vector<double> to_double(const IntVec& v) { return std::vector<double>(v.begin(), v.end()); }

std::vector<int64_t> features_for(const UNetPreset& u, int n_stages, int dim) {
  const int64_t maxf = dim == 2 ? u.max_features_2d : u.max_features_3d;
  std::vector<int64_t> f;
  for (int i = 0; i < n_stages; ++i) f.push_back(std::min<int64_t>(maxf, int64_t(u.base_features) << std::min(i, 32)));
  return f;
}

UNetShape unet_shape(const Ctx& c, const Topology& t) {
  const int n = t.n_stages();
  const UNetPreset& p = c.spec.unet;
  MEDSEG_CHECK_FILE(n <= static_cast<int>(p.encoder_blocks.size()) && n - 1 <= static_cast<int>(p.decoder_convs.size()),
                    c.spec.source, "planner: the patch needs ", n, " stages, more than the ", p.encoder_blocks.size(),
                    " of blocks_per_stage.encoder");
  UNetShape u;
  u.residual_encoder = c.spec.network == NetworkKind::ResidualEncoderUNet;
  u.features = features_for(p, n, static_cast<int>(t.patch_size.size()));
  u.strides = t.strides;
  u.encoder_blocks.assign(p.encoder_blocks.begin(), p.encoder_blocks.begin() + n);
  u.decoder_convs.assign(p.decoder_convs.begin(), p.decoder_convs.begin() + (n - 1));
  u.num_classes = c.ds.num_labels;
  return u;
}

int64_t proxy_estimate(Ctx& c, const Topology& t) {
  std::string key;
  for (auto v : t.patch_size) key += std::to_string(v) + ",";
  key += "_";
  for (const auto& s : t.strides)
    for (auto v : s) key += std::to_string(v) + ",";
  auto it = c.proxy_cache.find(key);
  if (it != c.proxy_cache.end()) return it->second;
  const int64_t e = conv_feature_map_size(unet_shape(c, t), t.patch_size);
  c.proxy_cache.emplace(key, e);
  return e;
}

ordered_json arch_json(const Ctx& c, const Topology& t) {
  const int dim = static_cast<int>(t.patch_size.size());
  const std::string d = std::to_string(dim);
  const bool res = c.spec.network == NetworkKind::ResidualEncoderUNet;
  const UNetShape u = unet_shape(c, t);
  ordered_json k;
  k["n_stages"] = t.n_stages();
  k["features_per_stage"] = u.features;
  k["conv_op"] = "torch.nn.modules.conv.Conv" + d + "d";
  k["kernel_sizes"] = t.kernel_sizes;
  k["strides"] = t.strides;
  k[res ? "n_blocks_per_stage" : "n_conv_per_stage"] = u.encoder_blocks;
  k["n_conv_per_stage_decoder"] = u.decoder_convs;
  k["conv_bias"] = true;
  k["norm_op"] = "torch.nn.modules.instancenorm.InstanceNorm" + d + "d";
  k["norm_op_kwargs"] = ordered_json{{"eps", 1e-05}, {"affine", true}};
  k["dropout_op"] = nullptr;
  k["dropout_op_kwargs"] = nullptr;
  k["nonlin"] = "torch.nn.LeakyReLU";
  k["nonlin_kwargs"] = ordered_json{{"inplace", true}};
  ordered_json a;
  a["network_class_name"] = std::string("dynamic_network_architectures.architectures.unet.") +
                            (res ? "ResidualEncoderUNet" : "PlainConvUNet");
  a["arch_kwargs"] = k;
  a["_kw_requires_import"] = {"conv_op", "norm_op", "dropout_op", "nonlin"};
  return a;
}

ArchitecturePlan arch_plan(const Ctx& c, const Topology& t) {
  return architecture_from_json(json::parse(arch_json(c, t).dump()), "planner");
}

// One nnU-Net shrink step: the chosen axis loses its divisor, recomputed once for the reduced shape.
Topology shrink(const Topology& t, const std::vector<double>& spacing, const std::vector<double>& median,
                int min_edge) {
  const std::size_t axis = axis_to_shrink(t.patch_size, median);
  IntVec p = t.patch_size;
  std::vector<double> tmp = to_double(p);
  tmp[axis] -= static_cast<double>(t.divisor[axis]);
  const Topology reduced = pool_and_conv_props(spacing, tmp, min_edge);
  p[axis] -= reduced.divisor[axis];
  MEDSEG_CHECK(p[axis] >= 1, "planner: cannot shrink the patch further to meet the GPU memory target");
  return pool_and_conv_props(spacing, to_double(p), min_edge);
}

std::string too_many_slabs(const Topology& t, int ranks) {
  return concat("--spatial_parallel ", ranks, ": no patch splits into ", ranks,
                " slabs aligned with the network's strides, down to the smallest, [", join(t.patch_size, ", "),
                "]; plan for fewer ranks");
}

}  // namespace

ConfigOut plan_unet_configuration(Ctx& c, const std::vector<double>& spacing, const std::vector<double>& median,
                                  bool median_is_int, const std::string& data_identifier, double approx_n_voxels) {
  for (double s : spacing) MEDSEG_CHECK(s > 0, "planner: spacing must be > 0");
  const int dim = static_cast<int>(spacing.size());
  const UNetPreset& u = c.spec.unet;
  Topology t = pool_and_conv_props(spacing, initial_patch(spacing, median), u.feature_map_min_edge);
  int64_t bs = 0;
  if (c.opt.memory_model == MemoryModelKind::Proxy) {
    const ProxyReference& r = u.reference;
    const double reference = (dim == 2 ? r.feature_maps_2d : r.feature_maps_3d) * (c.target_gb / r.gpu_memory_gb);
    const int ref_bs = dim == 2 ? r.batch_size_2d : r.batch_size_3d;
    auto too_big = [&](int64_t e) {
      return u.shrink_while == ShrinkRule::Estimate ? static_cast<double>(e) > reference
                                                    : static_cast<double>(e) / ref_bs * 2 > reference;
    };
    int64_t estimate = proxy_estimate(c, t);
    while (too_big(estimate)) {
      t = shrink(t, spacing, median, u.feature_map_min_edge);
      estimate = proxy_estimate(c, t);
    }
    bs = round_half_even_int(reference / static_cast<double>(estimate) * ref_bs);
  } else {
    // Same shrink order; the patch must fit with the minimum batch, then the batch grows to the budget.
    const MemoryOptions mo = c.memory_options();
    const double budget = c.budget_bytes();
    // Whether the patch splits into the ranks' slabs along an axis aligned with the strides.
    auto splits = [&](const Topology& tt) {
      if (mo.spatial_parallel <= 1) return true;
      std::vector<std::vector<int>> strides;
      for (const auto& row : tt.strides) strides.emplace_back(row.begin(), row.end());
      return spatial_shard_axis(std::vector<int>(tt.patch_size.begin(), tt.patch_size.end()), strides,
                                mo.spatial_parallel) >= 0;
    };
    auto peak = [&](const Topology& tt, int b) {
      const std::vector<int> p(tt.patch_size.begin(), tt.patch_size.end());
      // A patch that no axis splits into aligned slabs does not fit: the next shrink may.
      if (!splits(tt)) return std::numeric_limits<double>::infinity();
      return static_cast<double>(
          estimate_training_memory(arch_plan(c, tt), p, b, c.in_channels(), c.ds.num_labels, mo).peak_bytes);
    };
    while (peak(t, c.spec.min_batch) > budget) {
      try {
        t = shrink(t, spacing, median, u.feature_map_min_edge);
      } catch (const Error&) {
        // The smallest patch does not split: the rank count is to blame, not the memory target.
        MEDSEG_CHECK(splits(t), too_many_slabs(t, mo.spatial_parallel));
        throw;
      }
    }
    const std::vector<int> p(t.patch_size.begin(), t.patch_size.end());
    bs = max_batch_for_budget(arch_plan(c, t), p, c.in_channels(), c.ds.num_labels, mo, budget);
  }
  bs = cap_batch_size(c, bs, t.patch_size, approx_n_voxels);
  ordered_json plan = configuration_json(c, data_identifier, bs, t.patch_size, median, median_is_int, spacing);
  plan["architecture"] = arch_json(c, t);
  return {plan, t.patch_size};
}

}  // namespace medseg::planning::detail
