// Byte costs of dynamic-network-architectures' Primus (models/primus.h) in training: the patch embedding, the
// EVA blocks on t = prod(patch / patch_embed_size) tokens of width E, and the transposed-convolution decoder.
// The attention runs through the fused kernel (scaled_dot_product_attention), which keeps its output and one
// log-sum-exp per head and token, not the t x t weights. Layer norms and softmax statistics are fp32 under
// autocast.
#include <algorithm>

#include "core/error.h"
#include "planning/memory_ops.h"
#include "plans/primus_decoder.h"

namespace medseg::planning::detail {
namespace {

struct Primus {
  const StepSettings& step;
  bool amp;
  std::vector<Op> ops;

  int64_t act(int64_t elems) const { return step.bytes_per_activation * step.batch * elems; }
  int64_t fp32(int64_t elems) const { return 4 * step.batch * elems; }
  int64_t half(int64_t w) const { return amp ? 2 * w : 0; }
  Op& add(Op o) {
    ops.push_back(std::move(o));
    return ops.back();
  }
};

// The sizes every Primus op's bytes follow from.
struct PrimusShape {
  int64_t voxels = 0;               // of the patch
  int64_t t = 1;                    // patch tokens: prod(patch / patch_embed_size)
  int64_t kernel = 1;               // voxels of one patch-embedding kernel
  int64_t tokens = 0;               // t and the register tokens
  int64_t e = 0, heads = 0, h = 0;  // embedding width, attention heads, MLP width
};

PrimusShape primus_shape(const PrimusPlan& p, const std::vector<int64_t>& full) {
  PrimusShape x;
  x.voxels = volume(full);
  x.e = p.embed_dim;
  x.heads = p.eva_numheads;
  for (std::size_t i = 0; i < full.size(); ++i) {
    x.t *= full[i] / p.patch_embed_size[i];
    x.kernel *= p.patch_embed_size[i];
  }
  x.tokens = x.t + p.num_register_tokens;
  x.h = static_cast<int64_t>(static_cast<double>(x.e) * p.mlp_ratio);
  return x;
}

Op primus_embedding_op(const Primus& w, const PrimusPlan& p, const PrimusShape& x, int64_t in_ch) {
  const int64_t e = x.e, tokens = x.tokens;
  Op embed;
  embed.name = "down_projection";
  embed.params = in_ch * e * x.kernel + e + (p.use_abs_pos_embed ? tokens * e : 0) + p.num_register_tokens * e;
  embed.largest_param = std::max(in_ch * e * x.kernel, p.use_abs_pos_embed ? tokens * e : 0);
  embed.half_weights = w.half(in_ch * e * x.kernel);
  embed.saved = w.amp ? 2 * w.step.batch * in_ch * x.voxels : 0;  // the input's half copy
  embed.fwd_work = w.act(e * x.t) + w.fp32(e * tokens);           // conv output, its tokens with the position added
  embed.bwd_work = w.fp32(e * tokens) + w.act(in_ch * x.voxels);
  return embed;
}

// PrimusV2's and V3's residual patch embedding: its stem and stages as ResEnc stages of BasicBlockD, then
// final_proj (which keeps its input) with the position embedding, and V3's scaled projections onto the token grid
// (each keeps its output for its scale's gradient).
void add_residual_embedding(Primus& w, const PrimusPlan& p, const PrimusShape& x, int64_t in_ch,
                            const std::vector<int>& patch) {
  const std::size_t levels = p.embed_depths.size();
  ArchitecturePlan stages;
  stages.short_name = "ResidualEncoderUNet";
  stages.n_stages = static_cast<int>(levels + 1);
  stages.features_per_stage = p.embed_channels;
  stages.n_blocks_per_stage = {1};
  stages.n_blocks_per_stage.insert(stages.n_blocks_per_stage.end(), p.embed_depths.begin(), p.embed_depths.end());
  stages.kernel_sizes.assign(levels + 1, {3, 3, 3});
  stages.strides.assign(levels + 1, {2, 2, 2});
  stages.strides[0] = {1, 1, 1};
  stages.conv_bias = false;
  stages.norm_affine = true;
  for (Op o : residual_stages_ops(stages, patch, static_cast<int>(in_ch), w.step)) {
    o.name = "down_projection." + o.name;
    w.add(std::move(o));
  }
  const int64_t e = x.e, last = p.embed_channels.back(), pos = p.use_abs_pos_embed ? x.tokens * e : 0;
  Op proj;
  proj.name = "down_projection.final_proj";
  proj.params = last * e + e + pos + p.num_register_tokens * e;
  proj.largest_param = std::max(last * e, pos);
  proj.half_weights = w.half(last * e);
  proj.saved = w.act(last * x.t);
  proj.fwd_work = w.act(e * x.t) + w.fp32(e * x.tokens);
  proj.bwd_work = w.fp32(e * x.tokens) + w.act(last * x.t);
  if (p.embed_add_skips)
    for (std::size_t l = 0; l < levels; ++l) {
      const int64_t down = int64_t{1} << (3 * (levels - l));  // voxels of one projection kernel
      proj.params += p.embed_channels[l] * e * down + e + 1;
      proj.half_weights += w.half(p.embed_channels[l] * e * down);
      proj.saved += w.act(e * x.t);
      proj.fwd_work += w.act(e * x.t);
    }
  w.add(std::move(proj));
}

Op primus_attention_op(const Primus& w, const PrimusPlan& p, const PrimusShape& x, const std::string& name) {
  const int64_t e = x.e, tokens = x.tokens;
  Op at;
  at.name = name + ".attn";
  const int64_t wa = 4 * e * e + 3 * e;
  at.params = wa + 2 * e + (p.scale_attn_inner ? 2 * e : 0) + (p.init_values ? e : 0);
  at.largest_param = e * e;
  at.half_weights = w.half(wa);
  // norm1 input (fp32), q/k/v projection input, q, k, v, rotated q and k, the attention output and its
  // log-sum-exp (fp32), the inner norm's input (fp32), the projection input, the layer-scale input.
  at.saved = w.fp32(e * tokens) + w.act(e * tokens) + 3 * w.act(e * tokens) + 2 * w.act(e * tokens) +
             w.act(e * tokens) + w.fp32(x.heads * tokens) + (p.scale_attn_inner ? w.fp32(e * tokens) : 0) +
             w.act(e * tokens) + (p.init_values ? w.act(e * tokens) : 0);
  at.fwd_work = 3 * w.act(e * tokens);  // rotary temporaries
  at.bwd_work = 6 * w.act(e * tokens) + 2 * w.fp32(e * tokens);
  return at;
}

Op primus_mlp_op(const Primus& w, const PrimusPlan& p, const PrimusShape& x, const std::string& name) {
  const int64_t e = x.e, h = x.h, tokens = x.tokens;
  Op mlp;
  mlp.name = name + ".mlp";
  const int64_t wm = 3 * e * h + 2 * h + e;
  mlp.params = wm + 2 * e + 2 * h + (p.init_values ? e : 0);
  mlp.largest_param = e * h;
  mlp.half_weights = w.half(wm);
  // norm2 input (fp32), fc1 input, the gate and its SiLU, the other branch, their product (the norm's fp32
  // input), fc2 input, the layer-scale input.
  mlp.saved = w.fp32(e * tokens) + w.act(e * tokens) + 3 * w.act(h * tokens) + w.fp32(h * tokens) + w.act(h * tokens) +
              (p.init_values ? w.act(e * tokens) : 0);
  mlp.fwd_work = w.act(h * tokens);
  mlp.bwd_work = 3 * w.act(h * tokens) + w.fp32(h * tokens);
  return mlp;
}

// The transposed-convolution decoder from the tokens' grid up to the patch.
void add_primus_decoder(Primus& w, const PrimusPlan& p, const PrimusShape& x, int classes) {
  const PrimusDecoderStages d = primus_decoder_stages(
      std::vector<int64_t>(p.patch_embed_size.begin(), p.patch_embed_size.end()), p.embed_dim, classes);
  int64_t v = x.t;
  for (std::size_t s = 0; s + 1 < d.channels.size(); ++s) {
    const int64_t cin = d.channels[s], cout = d.channels[s + 1], k = volume(d.strides[s]);
    const bool last = s + 2 == d.channels.size();
    Op up;
    up.name = "up_projection.decode." + std::to_string(s);
    up.params = cin * cout * k + cout + (last ? 0 : 2 * cout);
    up.largest_param = cin * cout * k;
    up.half_weights = w.half(cin * cout * k);
    const int64_t out = v * k;
    up.saved = w.act(cin * v);  // the transposed convolution's input
    if (!last)  // LayerNormNd in plain ops (mean, difference, square, variance, root, quotient) and GELU's input
      up.saved += 4 * w.fp32(cout * out) + w.act(cout * out);
    up.fwd_work = w.fp32(cout * out);
    up.bwd_work = 2 * w.fp32(cout * out) + w.act(cin * v);
    w.add(up);
    v = out;
  }
}

}  // namespace

std::vector<Op> primus_ops(const ArchitecturePlan& a, const std::vector<int>& patch, int in_ch, int classes,
                           const MemoryOptions& opt, const StepSettings& step, bool checkpoint) {
  MEDSEG_CHECK(a.primus, "memory model: architecture is not Primus");
  const PrimusPlan& p = *a.primus;
  Primus w{step, step.bytes_per_activation == 2, {}};
  const PrimusShape x = primus_shape(p, std::vector<int64_t>(patch.begin(), patch.end()));
  if (p.residual_embedding())
    add_residual_embedding(w, p, x, in_ch, patch);
  else
    w.add(primus_embedding_op(w, p, x, in_ch));

  int segment = -1;
  for (int b = 0; b < p.eva_depth; ++b) {
    const std::string name = "eva.blocks." + std::to_string(b);
    Op at = primus_attention_op(w, p, x, name);
    Op mlp = primus_mlp_op(w, p, x, name);
    if (checkpoint) {
      at.segment = mlp.segment = ++segment;  // one EVA block per segment: its input is kept
      at.segment_input = w.act(x.e * x.tokens);
    }
    w.add(at);
    w.add(mlp);
  }
  Op norm;
  norm.name = "eva.norm";
  norm.params = 2 * x.e;
  norm.saved = w.fp32(x.e * x.tokens);
  norm.bwd_work = 2 * w.fp32(x.e * x.tokens);
  w.add(norm);

  add_primus_decoder(w, p, x, classes);
  (void)opt;
  w.add(loss_op({x.voxels}, classes, step));
  return w.ops;
}

}  // namespace medseg::planning::detail
