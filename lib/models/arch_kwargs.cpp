#include "models/arch_kwargs.h"

#include "core/error.h"

namespace medseg::models {
namespace {

std::string last_component(const std::string& s) {
  const auto p = s.rfind('.');
  return p == std::string::npos ? s : s.substr(p + 1);
}

std::vector<Shape> to_shapes(const std::vector<std::vector<int>>& rows) {
  std::vector<Shape> out;
  for (const auto& r : rows) out.push_back(to_shape(r));
  return out;
}

const std::vector<int>& required(const std::vector<int>& v, const char* key) {
  MEDSEG_CHECK(!v.empty(), "network: arch_kwargs lacks '", key, "'");
  return v;
}

NormKind norm_kind(const std::string& norm_op) {
  if (norm_op.empty()) return NormKind::kNone;
  const std::string n = last_component(norm_op);
  if (n.rfind("InstanceNorm", 0) == 0) return NormKind::kInstance;
  if (n.rfind("BatchNorm", 0) == 0) return NormKind::kBatch;
  throw Error("network: unsupported norm_op '" + n + "'");
}

NonlinKind nonlin_kind(const std::string& nonlin) {
  if (nonlin.empty()) return NonlinKind::kNone;
  const std::string n = last_component(nonlin);
  if (n == "LeakyReLU") return NonlinKind::kLeakyReLU;
  if (n == "ReLU") return NonlinKind::kReLU;
  throw Error("network: unsupported nonlin '" + n + "'");
}

void refuse_unbuilt(const planning::ArchitecturePlan& a) {
  MEDSEG_CHECK(a.block.empty() || last_component(a.block) == "BasicBlockD",
               "network: only BasicBlockD residual blocks are supported, got '", a.block, "'");
  MEDSEG_CHECK(!a.stem_channels || *a.stem_channels == a.features_per_stage.at(0),
               "network: stem_channels other than features_per_stage[0] are not supported");
  MEDSEG_CHECK(!a.nonlin_first, "network: nonlin_first=true is not supported");
}

}  // namespace

int dims_from_conv_op(const std::string& conv_op) {
  const std::string c = last_component(conv_op);
  if (c == "Conv3d") return 3;
  if (c == "Conv2d") return 2;
  throw Error("network: unsupported conv_op '" + conv_op + "' (expected Conv2d or Conv3d)");
}

UNetOptions unet_options(const planning::ArchitecturePlan& a, int64_t in_channels, int64_t num_classes) {
  UNetOptions o(in_channels, num_classes, to_shape(a.features_per_stage));
  o.spatial_dims(dims_from_conv_op(a.conv_op));
  o.kernel_sizes(to_shapes(a.kernel_sizes));
  o.strides(to_shapes(a.strides));
  if (a.is_residual_encoder_unet())
    o.n_blocks_per_stage(to_shape(required(a.n_blocks_per_stage, "n_blocks_per_stage")));
  else
    o.n_conv_per_stage(to_shape(required(a.n_conv_per_stage, "n_conv_per_stage")));
  o.n_conv_per_stage_decoder(to_shape(required(a.n_conv_per_stage_decoder, "n_conv_per_stage_decoder")));
  o.conv_bias(a.conv_bias);
  o.norm(norm_kind(a.norm_op)).norm_eps(a.norm_eps).norm_affine(a.norm_affine);
  o.dropout_p(a.dropout_p);
  o.nonlin(nonlin_kind(a.nonlin)).negative_slope(a.nonlin_negative_slope);
  refuse_unbuilt(a);
  return o;
}

SwinUNETROptions swin_options(const planning::ArchitecturePlan& a, int64_t in_channels, int64_t out_channels) {
  const planning::SwinPlan& s = a.swin.value();
  MEDSEG_CHECK(s.patch_size == 2, "SwinUNETR: only patch_size 2 is supported");
  return SwinUNETROptions(in_channels, out_channels)
      .feature_size(s.feature_size)
      .depths(to_shape(s.depths))
      .num_heads(to_shape(s.num_heads))
      .window_size(s.window_size)
      .use_v2(s.use_v2)
      .use_checkpoint(s.use_checkpoint)
      .drop_rate(s.drop_rate)
      .attn_drop_rate(s.attn_drop_rate)
      .dropout_path_rate(s.dropout_path_rate)
      .normalize(s.normalize)
      .spatial_dims(a.dim);
}

}  // namespace medseg::models
