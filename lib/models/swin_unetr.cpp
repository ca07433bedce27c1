#include "models/swin_unetr.h"

#include "core/error.h"

namespace medseg::models {

SwinTransformerImpl::SwinTransformerImpl(SwinUNETROptions options_) : options(std::move(options_)) { reset(); }

void SwinTransformerImpl::reset() {
  const SwinUNETROptions& o = options;
  const int dims = o.spatial_dims();
  const int64_t f = o.feature_size();
  patch_embed_ = register_module(
      "patch_embed", NamedConv(NamedConvOptions("proj", dims, o.in_channels(), f, {2}).stride({2}).bias(true)));
  const auto& depths = o.depths();
  int64_t total = 0;
  for (auto dpt : depths) total += dpt;
  // Stochastic depth rises linearly over all blocks (torch.linspace(0, rate, total)).
  std::vector<double> dpr(total);
  for (int64_t i = 0; i < total; ++i) dpr[i] = total > 1 ? o.dropout_path_rate() * i / (total - 1) : 0.0;
  const Shape window(dims, o.window_size());
  int64_t offset = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const int64_t dim = f << i;
    std::vector<double> stage_dpr(dpr.begin() + offset, dpr.begin() + offset + depths[i]);
    offset += depths[i];
    const std::string name = "layers" + std::to_string(i + 1);
    layers_[i] = register_module(
        name, torch::nn::ModuleList(BasicLayer(BasicLayerOptions(dim, depths[i], o.num_heads()[i], window)
                                                   .drop_path(stage_dpr)
                                                   .mlp_ratio(o.mlp_ratio())
                                                   .drop(o.drop_rate())
                                                   .attn_drop(o.attn_drop_rate())
                                                   .use_checkpoint(o.use_checkpoint()))));
    layers_c_[i] = nullptr;
    if (o.use_v2())
      layers_c_[i] = register_module(
          name + "c", torch::nn::ModuleList(UnetrBasicBlock(UnetrBlockOptions(dims, dim, dim).inplace(o.inplace()))));
  }
}

void SwinTransformerImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::SwinTransformer(";
  print_swin_options(stream, options);
  stream << ")";
}

void SwinTransformerImpl::set_checkpointing(bool on) {
  options.use_checkpoint(on);
  for (auto& l : layers_) l->at<BasicLayerImpl>(0).set_checkpointing(on);
}

namespace {
// F.layer_norm over channels without affine parameters (MONAI's proj_out(normalize=True)).
torch::Tensor channel_layer_norm(const torch::Tensor& x) {
  const int64_t d = x.dim() - 2;
  Shape to_last{0}, to_first{0, d + 1};
  for (int64_t a = 0; a < d; ++a) {
    to_last.push_back(a + 2);
    to_first.push_back(a + 1);
  }
  to_last.push_back(1);
  return torch::layer_norm(x.permute(to_last), {x.size(1)}).permute(to_first);
}
}  // namespace

std::vector<torch::Tensor> SwinTransformerImpl::forward(const torch::Tensor& x) {
  auto out = [normalize = options.normalize()](const torch::Tensor& t) {
    return normalize ? channel_layer_norm(t) : t;
  };
  torch::Tensor h = torch::dropout(patch_embed_->forward(x), options.drop_rate(), is_training());
  std::vector<torch::Tensor> hidden{out(h)};
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (layers_c_[i]) h = layers_c_[i]->at<UnetrBasicBlockImpl>(0).forward(h.contiguous());
    h = layers_[i]->at<BasicLayerImpl>(0).forward(h.contiguous());
    hidden.push_back(out(h));
  }
  return hidden;
}

SwinUNETRImpl::SwinUNETRImpl(SwinUNETROptions options_) : options(std::move(options_)) { reset(); }

void SwinUNETRImpl::reset() {
  const SwinUNETROptions& o = options;
  const int dims = o.spatial_dims();
  MEDSEG_CHECK(dims == 2 || dims == 3, "SwinUNETR: spatial_dims must be 2 or 3");
  MEDSEG_CHECK(o.feature_size() > 0 && o.feature_size() % 12 == 0,
               "SwinUNETR: feature_size must be a positive multiple of 12, got ", o.feature_size());
  MEDSEG_CHECK(o.depths().size() == 4 && o.num_heads().size() == 4,
               "SwinUNETR: depths and num_heads need 4 entries (four Swin stages)");
  for (double r : {o.drop_rate(), o.attn_drop_rate(), o.dropout_path_rate()})
    MEDSEG_CHECK(!(r < 0.0 || r > 1.0), "SwinUNETR: drop rates must lie in [0, 1]");
  for (size_t i = 0; i < 4; ++i)
    MEDSEG_CHECK(o.num_heads()[i] > 0 && (o.feature_size() << i) % o.num_heads()[i] == 0, "SwinUNETR: stage ", i + 1,
                 " width is not divisible by its head count");
  const int64_t f = o.feature_size();
  auto block = [&](int64_t in, int64_t out) { return UnetrBlockOptions(dims, in, out).inplace(o.inplace()); };
  swin_vit_ = register_module("swinViT", SwinTransformer(o));
  encoder1_ = register_module("encoder1", UnetrBasicBlock(block(o.in_channels(), f)));
  encoder2_ = register_module("encoder2", UnetrBasicBlock(block(f, f)));
  encoder3_ = register_module("encoder3", UnetrBasicBlock(block(2 * f, 2 * f)));
  encoder4_ = register_module("encoder4", UnetrBasicBlock(block(4 * f, 4 * f)));
  encoder10_ = register_module("encoder10", UnetrBasicBlock(block(16 * f, 16 * f)));
  decoder5_ = register_module("decoder5", UnetrUpBlock(block(16 * f, 8 * f)));
  decoder4_ = register_module("decoder4", UnetrUpBlock(block(8 * f, 4 * f)));
  decoder3_ = register_module("decoder3", UnetrUpBlock(block(4 * f, 2 * f)));
  decoder2_ = register_module("decoder2", UnetrUpBlock(block(2 * f, f)));
  decoder1_ = register_module("decoder1", UnetrUpBlock(block(f, f)));
  out_ = register_module("out", UnetOutBlock(UnetrBlockOptions(dims, f, o.out_channels())));
}

void SwinUNETRImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::SwinUNETR(";
  print_swin_options(stream, options);
  stream << ")";
}

void SwinUNETRImpl::set_spatial_shard(std::optional<distributed::SpatialShard> shard) {
  if (!shard) return;
  throw Error(
      "network: SwinUNETR has no spatially sharded forward: its (shifted) windows, patch merging and "
      "absolute window partition cross slab borders; use PlainConvUNet or ResidualEncoderUNet");
}

void SwinUNETRImpl::set_checkpointing(bool on) {
  options.use_checkpoint(on);
  swin_vit_->set_checkpointing(on);
}

void print_swin_options(std::ostream& out, const SwinUNETROptions& o) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  out << "in_channels=" << o.in_channels() << ", out_channels=" << o.out_channels()
      << ", feature_size=" << o.feature_size() << ", depths=";
  print_shape(out, o.depths());
  out << ", num_heads=";
  print_shape(out, o.num_heads());
  out << ", window_size=" << o.window_size() << ", mlp_ratio=" << o.mlp_ratio() << ", drop_rate=" << o.drop_rate()
      << ", attn_drop_rate=" << o.attn_drop_rate() << ", dropout_path_rate=" << o.dropout_path_rate()
      << ", normalize=" << b(o.normalize()) << ", use_checkpoint=" << b(o.use_checkpoint())
      << ", use_v2=" << b(o.use_v2()) << ", spatial_dims=" << o.spatial_dims() << ", inplace=" << b(o.inplace());
}

std::vector<torch::Tensor> SwinUNETRImpl::forward(const torch::Tensor& x) {
  const int dims = options.spatial_dims();
  MEDSEG_CHECK(x.dim() == dims + 2, "SwinUNETR: expected a ", dims + 2, "-D input (N, C, spatial), got ", x.dim(),
               "-D");
  for (int64_t a = 2; a < x.dim(); ++a)
    MEDSEG_CHECK(x.size(a) % 32 == 0, "SwinUNETR: spatial size ", x.size(a), " (axis ", a - 2,
                 ") is not divisible by 32 = patch_size^5");
  const auto h = swin_vit_->forward(x);
  const auto enc0 = encoder1_->forward(x);
  const auto enc1 = encoder2_->forward(h[0]);
  const auto enc2 = encoder3_->forward(h[1]);
  const auto enc3 = encoder4_->forward(h[2]);
  auto dec = encoder10_->forward(h[4]);
  dec = decoder5_->forward(dec, h[3]);
  dec = decoder4_->forward(dec, enc3);
  dec = decoder3_->forward(dec, enc2);
  dec = decoder2_->forward(dec, enc1);
  dec = decoder1_->forward(dec, enc0);
  return {out_->forward(dec)};
}

}  // namespace medseg::models
