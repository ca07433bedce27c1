#include "models/unet.h"

#include "core/error.h"
#include "models/activation_checkpoint.h"

namespace medseg::models {

LayerConfig UNetOptions::layer_config() const {
  LayerConfig c;
  c.dims = spatial_dims_;
  c.conv_bias = conv_bias_;
  c.norm = norm_;
  c.norm_eps = norm_eps_;
  c.norm_affine = norm_affine_;
  c.dropout_p = dropout_p_;
  c.nonlin = nonlin_;
  c.negative_slope = negative_slope_;
  c.inplace = inplace_;
  return c;
}

void UNetOptions::validate(const std::string& blocks_key) const {
  const size_t n = features_per_stage_.size();
  auto need = [&](size_t got, size_t want, const std::string& key) {
    if (got != want)
      throw Error("network: arch_kwargs." + key + " has " + std::to_string(got) + " entries, expected " +
                  std::to_string(want) + " (n_stages = " + std::to_string(n) + ")");
  };
  if (n < 2) throw Error("network: a U-Net needs at least 2 stages");
  if (spatial_dims_ != 2 && spatial_dims_ != 3) throw Error("network: spatial dims must be 2 or 3");
  need(kernel_sizes_.size(), n, "kernel_sizes");
  need(strides_.size(), n, "strides");
  need(blocks_key == "n_conv_per_stage" ? n_conv_per_stage_.size() : n_blocks_per_stage_.size(), n, blocks_key);
  need(n_conv_per_stage_decoder_.size(), n - 1, "n_conv_per_stage_decoder");
  for (size_t s = 0; s < n; ++s) {
    per_axis(kernel_sizes_[s], spatial_dims_, "kernel_sizes[" + std::to_string(s) + "]");
    per_axis(strides_[s], spatial_dims_, "strides[" + std::to_string(s) + "]");
  }
  if (input_channels_ < 1 || num_classes_ < 1) throw Error("network: input channels and classes must be >= 1");
}

UNetEncoderImpl::UNetEncoderImpl(const UNetOptions& o, bool residual) : checkpoint_(o.checkpoint_encoder()) {
  const LayerConfig cfg = o.layer_config();
  const auto& f = o.features_per_stage();
  int64_t in = o.input_channels();
  if (residual) {
    stem_ = register_module("stem", StackedConvBlocks(cfg, 1, in, f[0], o.kernel_sizes()[0], Shape{1}));
    in = f[0];
  }
  for (int64_t s = 0; s < o.n_stages(); ++s) {
    const Shape& k = o.kernel_sizes()[s];
    const Shape& st = o.strides()[s];
    if (residual) {
      StackedResidualBlocks stage(cfg, o.n_blocks_per_stage()[s], in, f[s], k, st);
      stages_->push_back(stage);
      res_stages_.push_back(stage);
      stage_mods_.push_back(stage.ptr());
      stage_fns_.emplace_back([m = stage.ptr()](const torch::Tensor& x) { return m->forward(x); });
    } else {
      // PlainConvEncoder wraps each stage's StackedConvBlocks in an nn.Sequential: keys stages.<s>.0.convs.*
      torch::nn::Sequential stage;
      stage->push_back(StackedConvBlocks(cfg, o.n_conv_per_stage()[s], in, f[s], k, st));
      stages_->push_back(stage);
      stage_mods_.push_back(stage.ptr());
      stage_fns_.emplace_back([m = stage.ptr()](const torch::Tensor& x) { return m->forward(x); });
    }
    in = f[s];
  }
  register_module("stages", stages_);
}

std::vector<torch::Tensor> UNetEncoderImpl::forward(torch::Tensor x) {
  if (stem_) x = stem_->forward(x);
  std::vector<torch::Tensor> skips;
  skips.reserve(stage_fns_.size());
  const bool ckpt = checkpoint_ && is_training();
  for (size_t s = 0; s < stage_fns_.size(); ++s) {
    x = ckpt ? activation_checkpoint(stage_fns_[s], x, *stage_mods_[s]) : stage_fns_[s](x);
    skips.push_back(x);
  }
  return skips;
}

void UNetEncoderImpl::zero_last_norms() {
  for (auto& s : res_stages_) s->zero_last_norms();
}

UNetDecoderImpl::UNetDecoderImpl(const UNetOptions& o) {
  const LayerConfig cfg = o.layer_config();
  const auto& f = o.features_per_stage();
  const int64_t n = o.n_stages();
  for (int64_t s = 1; s < n; ++s) {
    const int64_t below = f[n - s], skip = f[n - s - 1];
    auto tc = make_conv_transpose(cfg.dims, below, skip, o.strides()[n - s], o.conv_bias());
    transpconvs_->push_back(tc.ptr());
    transp_list_.push_back(tc);
    StackedConvBlocks st(cfg, o.n_conv_per_stage_decoder()[s - 1], 2 * skip, skip, o.kernel_sizes()[n - s - 1], Shape{1});
    stages_->push_back(st);
    stage_list_.push_back(st);
    // Heads for every scale are always built so that weights load with deep supervision on or off.
    auto seg = make_conv(cfg.dims, skip, o.num_classes(), {1}, {1}, /*bias=*/true);
    seg_layers_->push_back(seg.ptr());
    seg_list_.push_back(seg);
  }
  register_module("stages", stages_);
  register_module("transpconvs", transpconvs_);
  register_module("seg_layers", seg_layers_);
}

std::vector<torch::Tensor> UNetDecoderImpl::forward(const std::vector<torch::Tensor>& skips, bool deep_supervision) {
  const size_t n = stage_list_.size();
  if (skips.size() != n + 1) throw Error("network: decoder expects one skip per encoder stage");
  torch::Tensor x = skips.back();
  std::vector<torch::Tensor> outs;
  for (size_t s = 0; s < n; ++s) {
    x = transp_list_[s].forward(x);
    x = torch::cat({x, skips[skips.size() - s - 2]}, 1);
    x = stage_list_[s]->forward(x);
    if (deep_supervision || s == n - 1) outs.push_back(seg_list_[s].forward(x));
  }
  std::reverse(outs.begin(), outs.end());
  return outs;
}

UNetBaseImpl::UNetBaseImpl(const UNetOptions& o, bool residual)
    : deep_supervision_(o.deep_supervision()), dims_(o.spatial_dims()) {
  o.validate(residual ? "n_blocks_per_stage" : "n_conv_per_stage");
  encoder_ = register_module("encoder", UNetEncoder(o, residual));
  decoder_ = register_module("decoder", UNetDecoder(o));
  if (o.init_weights()) {
    he_init(*this, 1e-2);
    if (residual) encoder_->zero_last_norms();
  }
}

std::vector<torch::Tensor> UNetBaseImpl::forward(const torch::Tensor& x) {
  if (x.dim() != dims_ + 2)
    throw Error("network: " + class_name() + " expects a " + std::to_string(dims_ + 2) + "-D input (N, C, spatial), got " +
                std::to_string(x.dim()) + "-D");
  return decoder_->forward(encoder_->forward(x), deep_supervision_);
}

PlainConvUNetImpl::PlainConvUNetImpl(const UNetOptions& o) : UNetBaseImpl(o, false) {}
ResidualEncoderUNetImpl::ResidualEncoderUNetImpl(const UNetOptions& o) : UNetBaseImpl(o, true) {}

}  // namespace medseg::models
