// Byte costs of MONAI's SwinUNETR (v1 layout, see monai-and-libtorch.md section 1) in training.
// Swin blocks are split like MONAI's checkpointing: part 1 = norm1, (shifted) window attention and
// projection; part 2 = norm2 and the MLP. Layer norm and softmax run in fp32 under autocast, so the
// tensors they keep are 4 bytes per element in both precisions.
#include <algorithm>

#include "core/error.h"
#include "planning/memory_ops.h"

namespace medseg::planning::detail {
namespace {

struct Swin {
  const StepSettings& step;
  bool amp, checkpoint;
  std::vector<Op> ops;
  int segment = -1;

  // Bytes of `elems` elements per sample, for the whole batch: activations (2 under AMP) and fp32 tensors.
  int64_t activation_bytes(int64_t elems) const { return step.bytes_per_activation * step.batch * elems; }
  int64_t fp32_bytes(int64_t elems) const { return 4 * step.batch * elems; }
  int64_t half(int64_t w) const { return amp ? 2 * w : 0; }
  Op& add(Op o) {
    ops.push_back(std::move(o));
    return ops.back();
  }

  // MONAI UnetResBlock: conv-IN-LReLU(in place)-conv-IN, 1x1 conv + IN on the skip when channels
  // change, in-place add, LReLU. Convs have no bias; IN has no affine parameters.
  void res_block(const std::string& name, int64_t cin, int64_t cout, int64_t kvol, int64_t v) {
    Op o;
    o.name = name;
    const bool project = cin != cout;
    const int64_t w = cin * cout * kvol + cout * cout * kvol + (project ? cin * cout : 0);
    o.params = w;
    o.half_weights = half(w);
    o.saved = (4 + (project ? 1 : 0)) * activation_bytes(cout * v);
    o.fwd_work = project ? activation_bytes(cout * v) : 0;  // skip norm output until the add
    o.bwd_work = activation_bytes(cout * v) + std::max(activation_bytes(cout * v), activation_bytes(cin * v));
    add(std::move(o));
  }

  // F.layer_norm over channels of a hidden state, read by the next encoder conv.
  void proj_out(const std::string& name, int64_t c, int64_t t) {
    Op o;
    o.name = name;
    // fp32 norm input; the conv's half copy (fp32: the norm output itself)
    o.saved = fp32_bytes(c * t) + (amp ? activation_bytes(c * t) : 0);
    if (!amp) o.saved += fp32_bytes(c * t);
    o.fwd_work = amp ? fp32_bytes(c * t) : 0;
    o.bwd_work = 2 * fp32_bytes(c * t);
    add(std::move(o));
  }

  // One Swin block at `dim` channels, `t` tokens (tp with window padding), `wn` tokens per window.
  void block(const std::string& name, int64_t dim, int64_t heads, int64_t t, int64_t tp, int64_t wn, int64_t bias_table,
             bool shifted, int64_t mask_bytes) {
    const int64_t attn = tp * wn * heads;  // attention matrix elements per sample
    Op p1;
    p1.name = name + ".attn";
    const int64_t w1 = 3 * dim * dim + 3 * dim + dim * dim + dim;
    p1.params = 2 * dim + w1 + bias_table;
    p1.half_weights = half(w1);
    // norm1 input (fp32), qkv input, qkv output (k, v views), scaled q, softmax output (fp32),
    // its half copy for attn @ v under AMP, projection input.
    p1.saved = fp32_bytes(dim * t) + activation_bytes(dim * tp) + activation_bytes(3 * dim * tp) +
               activation_bytes(dim * tp) + fp32_bytes(attn) + (amp ? activation_bytes(attn) : 0) +
               activation_bytes(dim * tp);
    // pre-softmax logits, bias/mask adds
    p1.fwd_work = fp32_bytes(attn) + activation_bytes(attn) + (shifted ? mask_bytes : 0);
    p1.bwd_work = activation_bytes(attn) + 2 * fp32_bytes(attn) + 2 * activation_bytes(dim * tp);
    Op p2;
    p2.name = name + ".mlp";
    const int64_t w2 = 8 * dim * dim + 5 * dim;
    p2.params = 2 * dim + w2;
    p2.half_weights = half(w2);
    // norm2 input, fc1 input, GELU input, fc2 input
    p2.saved = fp32_bytes(dim * t) + activation_bytes(dim * t) + 2 * activation_bytes(4 * dim * t);
    p2.fwd_work = activation_bytes(4 * dim * t);
    p2.bwd_work = 2 * activation_bytes(4 * dim * t) + activation_bytes(dim * t);
    if (checkpoint) {
      p1.segment = ++segment;
      // checkpoint keeps x (and the mask)
      p1.segment_input = activation_bytes(dim * t) + (shifted ? mask_bytes : 0);
      p2.segment = ++segment;
      p2.segment_input = activation_bytes(dim * t);
    }
    add(std::move(p1));
    add(std::move(p2));
  }

  void merging(const std::string& name, int64_t dim, int64_t t) {
    Op o;
    o.name = name;
    o.params = 16 * dim + 16 * dim * dim;
    o.half_weights = half(16 * dim * dim);
    o.saved = fp32_bytes(dim * t) + activation_bytes(dim * t);  // norm input (8C x T/8, fp32), reduction input
    o.fwd_work = activation_bytes(dim * t);                     // the concatenated sub-grids
    o.bwd_work = 2 * fp32_bytes(dim * t);
    add(std::move(o));
  }
};

// The patch and its token grids: stage i works at patch / 2^(i+1).
struct SwinGrid {
  const SwinPlan& s;
  std::vector<int64_t> full;  // the patch
  int64_t voxels;
  int dim;
  int64_t conv_taps, up_taps;  // 3^dim and 2^dim kernels

  // Tokens of stage i, padded to whole windows or not; `window` (if given) gets the tokens of one window.
  int64_t tokens(int i, bool padded = false, int64_t* window = nullptr) const {
    int64_t t = 1, wn = 1;
    for (int64_t x : full) {
      const int64_t r = x >> (i + 1);
      const int64_t win = std::min<int64_t>(s.window_size, r);  // MONAI shrinks the window to the grid
      t *= padded ? (r + win - 1) / win * win : r;
      wn *= win;
    }
    if (window) *window = wn;
    return t;
  }
};

// The patch embedding and the four Swin stages, each with its merging and its hidden-state projection.
void add_swin_transformer(Swin& w, const SwinGrid& g, int64_t in_channels) {
  const SwinPlan& s = g.s;
  const int64_t feature_size = s.feature_size;
  Op embed;
  embed.name = "swin.patch_embed";
  embed.params = in_channels * feature_size * g.up_taps + feature_size;
  embed.half_weights = w.half(in_channels * feature_size * g.up_taps);
  embed.saved = w.amp ? 2 * w.step.batch * in_channels * g.voxels : 0;  // half copy of the input
  embed.bwd_work = w.activation_bytes(feature_size * g.tokens(0)) + w.activation_bytes(in_channels * g.voxels);
  w.add(embed);
  w.proj_out("swin.hidden0", feature_size, g.tokens(0));
  for (int i = 0; i < 4; ++i) {
    const int64_t c = feature_size << i, t = g.tokens(i);
    int64_t wn = 0;
    const int64_t tp = g.tokens(i, true, &wn);
    bool can_shift = false;
    for (int64_t x : g.full) can_shift = can_shift || (x >> (i + 1)) > s.window_size;
    int64_t table = s.num_heads[i];
    for (int j = 0; j < g.dim; ++j) table *= 2 * s.window_size - 1;
    const int64_t mask = can_shift ? 4 * tp * wn : 0;  // one fp32 mask per layer, not per sample
    for (int b = 0; b < s.depths[i]; ++b)
      w.block("swin.layers" + std::to_string(i + 1) + "." + std::to_string(b), c, s.num_heads[i], t, tp, wn, table,
              can_shift && b % 2 == 1, mask);
    w.merging("swin.layers" + std::to_string(i + 1) + ".merge", c, t);
    w.proj_out("swin.hidden" + std::to_string(i + 1), 2 * c, g.tokens(i + 1));
  }
}

// CNN encoders on the input and the hidden states (never checkpointed in MONAI); tagged with the skip they feed.
void add_swin_cnn_encoders(Swin& w, const SwinGrid& g, int64_t in_channels) {
  const int64_t feature_size = g.s.feature_size;
  w.res_block("encoder1", in_channels, feature_size, g.conv_taps, g.voxels);
  // Its two convs each keep a half copy of the input.
  if (w.amp) w.ops.back().saved += 2 * 2 * w.step.batch * in_channels * g.voxels;
  w.ops.back().tag = 0;
  w.res_block("encoder2", feature_size, feature_size, g.conv_taps, g.tokens(0));
  w.ops.back().tag = 1;
  w.res_block("encoder3", 2 * feature_size, 2 * feature_size, g.conv_taps, g.tokens(1));
  w.ops.back().tag = 2;
  w.res_block("encoder4", 4 * feature_size, 4 * feature_size, g.conv_taps, g.tokens(2));
  w.ops.back().tag = 3;
  w.res_block("encoder10", 16 * feature_size, 16 * feature_size, g.conv_taps, g.tokens(4));
}

// Decoders: transposed conv (kernel 2, stride 2, no bias), concat with the skip, residual block 2C -> C.
void add_swin_decoders(Swin& w, const SwinGrid& g) {
  const int64_t feature_size = g.s.feature_size;
  struct Up {
    const char* name;
    int64_t cin, cout, v;
    int skip_tag;
  };
  const Up ups[] = {{"decoder5", 16 * feature_size, 8 * feature_size, g.tokens(3), 4},
                    {"decoder4", 8 * feature_size, 4 * feature_size, g.tokens(2), 3},
                    {"decoder3", 4 * feature_size, 2 * feature_size, g.tokens(1), 2},
                    {"decoder2", 2 * feature_size, feature_size, g.tokens(0), 1},
                    {"decoder1", feature_size, feature_size, g.voxels, 0}};
  for (const auto& u : ups) {
    Op t;
    t.name = std::string(u.name) + ".transpconv";
    t.params = u.cin * u.cout * g.up_taps;
    t.half_weights = w.half(t.params);
    t.fwd_work = w.activation_bytes(u.cout * u.v);
    t.bwd_work = w.activation_bytes(u.cout * u.v) + w.activation_bytes(u.cin * u.v / (g.dim == 3 ? 8 : 4));
    w.add(t);
    Op c;
    c.name = std::string(u.name) + ".concat";
    c.saved = w.activation_bytes(2 * u.cout * u.v);
    if (u.skip_tag != 4) {  // hidden state 3 comes from the Swin branch directly
      c.hold_tag = u.skip_tag;
      c.hold = w.activation_bytes(2 * u.cout * u.v);
    }
    w.add(c);
    w.res_block(std::string(u.name) + ".block", 2 * u.cout, u.cout, g.conv_taps, u.v);
  }
}

}  // namespace

std::vector<Op> swin_ops(const ArchitecturePlan& a, const std::vector<int>& patch, int in_ch, int classes,
                         const MemoryOptions& opt, const StepSettings& step, bool checkpoint) {
  (void)opt;
  MEDSEG_CHECK(a.swin, "memory model: architecture is not SwinUNETR");
  const SwinPlan& s = *a.swin;
  const int dim = static_cast<int>(patch.size());
  for (int p : patch) MEDSEG_CHECK(p % 32 == 0, "memory model: SwinUNETR needs patch sizes divisible by 32");
  Swin w{step, step.bytes_per_activation == 2, checkpoint, {}};
  std::vector<int64_t> full(patch.begin(), patch.end());
  const int64_t voxels = volume(full);
  const SwinGrid g{s, full, voxels, dim, dim == 3 ? 27 : 9, dim == 3 ? 8 : 4};

  add_swin_transformer(w, g, in_ch);
  add_swin_cnn_encoders(w, g, in_ch);
  add_swin_decoders(w, g);
  const int64_t feature_size = s.feature_size;
  Op out;
  out.name = "out";
  out.params = feature_size * classes + classes;
  out.half_weights = w.half(out.params);
  out.saved = w.activation_bytes(classes * voxels);
  out.loss_grad = w.fp32_bytes(classes * voxels);
  out.bwd_work = w.activation_bytes(feature_size * voxels);
  w.add(out);
  w.ops.push_back(loss_op({voxels}, classes, step));
  return w.ops;
}

}  // namespace medseg::planning::detail
