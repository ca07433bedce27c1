// Byte costs of PlainConvUNet / ResidualEncoderUNet (dynamic-network-architectures) in training.
// What autograd keeps, per ConvDropoutNormReLU with an in-place LeakyReLU: the conv output (saved by
// the instance norm) and the norm output overwritten by the activation (saved by the activation and
// by the next conv). A non-in-place activation keeps all three. The CPU specifics (oneDNN layouts,
// CPU autocast's fp32 ops) were found by tracing allocations of real steps (medseg_bench_memory).
#include <algorithm>

#include "core/error.h"
#include "planning/memory_ops.h"

namespace medseg::planning::detail {

int64_t volume(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (auto x : v) p *= x;
  return p;
}

Op loss_op(const std::vector<int64_t>& voxels_per_scale, int classes, const StepSettings& step) {
  Op o;
  o.name = "loss";
  const int64_t batch = step.batch;
  // CUDA autocast promotes softmax to fp32; CPU autocast does not (cross-entropy's log-softmax is fp32 on both).
  const int64_t softmax_bytes = step.cpu_autocast ? step.bytes_per_activation : 4;
  int64_t largest_scale = 0;
  for (auto v : voxels_per_scale) {
    o.saved += batch * v * classes * (softmax_bytes + 4 + 1);  // softmax and log-softmax outputs, one-hot (bool)
    largest_scale = std::max(largest_scale, v);
  }
  // fp32 copies of the logits for cross-entropy and softmax, and the target as int64 for scatter.
  const int64_t logit_copies = step.bytes_per_activation == 2 ? 2 : 1;
  o.fwd_work = batch * largest_scale * (classes * 4 * logit_copies + 8);
  o.bwd_work = batch * largest_scale * classes * 8;  // gradients of the two fp32 outputs at the largest scale
  return o;
}

namespace {

struct Builder {
  const ArchitecturePlan& a;
  StepSettings step;
  bool amp, checkpoint;
  std::vector<Op> ops;
  int segment = -1;

  double dropout_p = 0;
  bool fp32_tconv = false;  // CPU autocast (LibTorch 1.13) runs transposed convs in fp32
  // Bytes of `elems` activation elements per sample, for the whole batch.
  int64_t activation_bytes(int64_t elems) const { return step.bytes_per_activation * step.batch * elems; }
  int64_t fp32_bytes(int64_t elems) const { return 4 * step.batch * elems; }
  int64_t half(int64_t weights) const { return amp ? 2 * weights : 0; }
  int64_t norm_params(int64_t c) const { return a.norm_affine ? 2 * c : 0; }

  Op& add(Op o) {
    o.segment = checkpoint ? segment : -1;
    ops.push_back(std::move(o));
    return ops.back();
  }

  void begin_segment(int64_t input_bytes) {
    if (!checkpoint) return;
    ++segment;
    pending_segment_input = input_bytes;
  }
  int64_t pending_segment_input = 0;

  Op make(const std::string& name) {
    Op o;
    o.name = name;
    o.segment_input = pending_segment_input;
    pending_segment_input = 0;
    return o;
  }

  // conv -> norm -> LeakyReLU, `cin` x `vin` voxels in, `cout` x `vout` out.
  // Spatial parallelism: a convolution whose kernel spans `k` planes of the slab axis fetches k - 1
  // halo planes of its `len`-plane input slab. It keeps the halos (not a padded copy of its input)
  // and builds the padded input while it runs, forward and backward.
  double halo_fraction(int k, int64_t len) const {
    return step.halo_axis < 0 || k <= 1 || len <= 0 ? 0.0 : static_cast<double>(k - 1) / static_cast<double>(len);
  }
  void add_halo(Op& o, int64_t in_elems, double halo) const {
    if (halo <= 0) return;
    const int64_t in = activation_bytes(in_elems);
    o.saved += static_cast<int64_t>(static_cast<double>(in) * halo);
    o.fwd_work += static_cast<int64_t>(static_cast<double>(in) * (1 + halo));
    o.bwd_work += static_cast<int64_t>(static_cast<double>(in) * (1 + halo));
  }

  void conv_norm_act(const std::string& name, int64_t cin, int64_t cout, int64_t kvol, int64_t vin, int64_t vout,
                     bool act = true, double halo = 0) {
    Op o = make(name);
    const int64_t w = cin * cout * kvol + (a.conv_bias ? cout : 0);
    o.params = w + norm_params(cout);
    o.largest_param = cin * cout * kvol;
    o.macs = cin * cout * kvol * vout;
    o.half_weights = half(w);
    const int kept =
        act ? (a.nonlin_inplace ? 2 : 3) : 2;  // without act: conv out + norm out (kept by the residual add)
    o.saved = kept * activation_bytes(cout * vout);
    // Dropout (conv -> dropout -> norm) keeps a bool mask; its output replaces the conv output as the
    // tensor the norm keeps. DNA puts it in every ConvDropoutNormReLU that has a nonlinearity.
    if (act && dropout_p > 0) o.saved += step.batch * cout * vout;
    o.bwd_work = conv_block_bwd(cin * vin, cout * vout);
    add_halo(o, cin * vin, halo);
    add(std::move(o));
  }

  // Gradients alive at once while a conv -> norm -> activation block runs backward, the incoming one
  // included. Activation: the incoming gradient and the activation's input gradient (medseg's
  // InstanceNorm output is not an autograd view, so the in-place LeakyReLU, and ResEnc's in-place
  // residual add, need no CopySlices buffers). Conv: output and input gradients; on the CPU oneDNN
  // makes the input gradient in its blocked layout and copies it to a dense tensor, two at once.
  int64_t conv_block_bwd(int64_t in_elems, int64_t out_elems) const {
    const int64_t out = activation_bytes(out_elems), in = activation_bytes(in_elems);
    return std::max(2 * out, out + (step.cpu ? 2 : 1) * in);
  }

  void residual_block(const std::string& name, int64_t cin, int64_t cout, int64_t kvol, bool strided, int64_t vin,
                      int64_t vout, double halo_in, double halo_out) {
    const bool project = cin != cout;
    if (strided) {  // AvgPool on the skip; its output is kept only if a 1x1 conv reads it
      Op p = make(name + ".skip.pool");
      p.saved = project ? activation_bytes(cin * vout) : 0;
      // CPU autocast runs avg_pool3d in fp32: the fp32 copy of its input is what the pool keeps.
      if (step.cpu_autocast && a.dim == 3) p.saved += fp32_bytes(cin * vin);
      p.fwd_work = project ? 0 : activation_bytes(cin * vout);
      p.bwd_work = activation_bytes(cin * vout) + activation_bytes(cin * vin);
      add(std::move(p));
    }
    if (project) {
      Op s = make(name + ".skip.conv");
      s.params = cin * cout + norm_params(cout);
      s.largest_param = cin * cout;
      s.macs = cin * cout * vout;
      s.half_weights = half(cin * cout);
      s.saved = activation_bytes(cout * vout);     // conv output, read by the norm's backward
      s.fwd_work = activation_bytes(cout * vout);  // norm output until the residual add
      s.bwd_work = 2 * activation_bytes(cout * vout) + activation_bytes(cin * vout);
      add(std::move(s));
    }
    conv_norm_act(name + ".conv1", cin, cout, kvol, vin, vout, true, halo_in);
    conv_norm_act(name + ".conv2", cout, cout, kvol, vout, vout, /*act=*/false, halo_out);
  }
};

int64_t kvol(const std::vector<int>& k) {
  int64_t v = 1;
  for (int x : k) v *= x;
  return v;
}

// Dropout's p from the plan's kwargs (DNA's default 0.5 when the plan names the op but not p); 0 without dropout.
double unet_dropout_p(const ArchitecturePlan& a) {
  if (a.dropout_op.empty()) return 0;
  const json& k = a.dropout_op_kwargs;
  return k.is_object() && k.contains("p") && k.at("p").is_number() ? k.at("p").get<double>() : 0.5;
}

// Resolution (voxels) after each stage's stride, and the planes of the slab axis (spatial parallelism).
struct UnetGrid {
  std::vector<int64_t> vox, len;  // per stage, after its stride
  int64_t v_in = 0, len_in = 0;   // the patch
  std::size_t ax = 0;             // the slab axis (0 without spatial parallelism)
  const ArchitecturePlan* a = nullptr;
  // Kernel size of stage `s` along the slab axis: the halo planes its convolutions fetch.
  int k_axis(int s) const { return a->kernel_sizes[s][ax]; }
};

UnetGrid unet_grid(const ArchitecturePlan& a, const std::vector<int>& patch, const StepSettings& step) {
  UnetGrid g;
  g.a = &a;
  std::vector<int64_t> size(patch.begin(), patch.end());
  g.v_in = volume(size);
  g.ax = step.halo_axis < 0 ? 0 : static_cast<std::size_t>(step.halo_axis);
  g.len_in = size[g.ax];
  for (int s = 0; s < a.n_stages; ++s) {
    for (std::size_t i = 0; i < size.size(); ++i) size[i] /= a.strides[s][i];
    g.vox.push_back(volume(size));
    g.len.push_back(size[g.ax]);
  }
  return g;
}

// The encoder's ops, the ResEnc stem included where `stem`; each stage's last op is tagged with the stage (its
// skip's gradient lands there).
void add_unet_encoder(Builder& b, const UnetGrid& g, int in_ch, bool residual, bool stem) {
  const ArchitecturePlan& a = b.a;
  const auto& features = a.features_per_stage;
  const auto blocks = a.encoder_blocks();
  int64_t cin = in_ch, vprev = g.v_in;
  if (stem) {  // the stem runs outside the checkpointed stages
    b.conv_norm_act("stem", cin, features[0], kvol(a.kernel_sizes[0]), g.v_in, g.v_in, true,
                    b.halo_fraction(g.k_axis(0), g.len_in));
    cin = features[0];
  }
  for (int s = 0; s < a.n_stages; ++s) {
    // A checkpointed stage keeps its input; stage 0's (the batch or the stem output) is counted already.
    b.begin_segment(s == 0 ? 0 : b.activation_bytes(cin * vprev));
    const int64_t kv = kvol(a.kernel_sizes[s]);
    bool strided = false;
    for (int x : a.strides[s]) strided = strided || x != 1;
    for (int j = 0; j < blocks[s]; ++j) {
      const std::string name = "encoder." + std::to_string(s) + "." + std::to_string(j);
      const int64_t vi = j == 0 ? vprev : g.vox[s];
      const int64_t c_in = j == 0 ? cin : features[s];
      const double h_in = b.halo_fraction(g.k_axis(s), j == 0 ? (s == 0 ? g.len_in : g.len[s - 1]) : g.len[s]);
      const double h_out = b.halo_fraction(g.k_axis(s), g.len[s]);
      if (residual)
        b.residual_block(name, c_in, features[s], kv, j == 0 && strided, vi, g.vox[s], h_in, h_out);
      else
        b.conv_norm_act(name, c_in, features[s], kv, vi, g.vox[s], true, h_in);
    }
    b.ops.back().tag = s;  // the stage output: its gradient from the skip is consumed here
    cin = features[s];
    vprev = g.vox[s];
  }
  // Under AMP the first conv reads a half copy of the input batch, which it keeps.
  if (b.amp) b.ops.front().saved += 2 * b.step.batch * in_ch * g.v_in;
}

// Decoder stage `dd`'s upsampling: from encoder stage e + 1's channels and voxels to stage e's.
void add_unet_transposed_conv(Builder& b, const UnetGrid& g, int dd, int e, bool encoder_checkpointed) {
  const ArchitecturePlan& a = b.a;
  const auto& features = a.features_per_stage;
  const int64_t channels = features[e], voxels = g.vox[e], channels_below = features[e + 1],
                voxels_below = g.vox[e + 1];
  Op t = b.make("decoder." + std::to_string(dd) + ".transpconv");
  const int64_t w = channels_below * channels * kvol(a.strides[e + 1]) + (a.conv_bias ? channels : 0);
  t.params = w;
  t.largest_param = w - (a.conv_bias ? channels : 0);
  t.macs = t.largest_param * voxels_below;  // each input voxel meets the whole kernel once
  // Its input is kept by the layer that made it, except the checkpointed encoder's output.
  if (dd == 0 && encoder_checkpointed) t.saved = b.activation_bytes(channels_below * voxels_below);
  if (b.fp32_tconv) {  // input cast up and kept in fp32, output in fp32 until the concatenation
    t.saved = b.fp32_bytes(channels_below * voxels_below);
    t.fwd_work = b.fp32_bytes(channels * voxels);
    t.bwd_work = b.fp32_bytes(channels * voxels) + b.fp32_bytes(channels_below * voxels_below) +
                 b.activation_bytes(channels_below * voxels_below);
  } else {
    t.half_weights = b.half(w);
    t.fwd_work = b.activation_bytes(channels * voxels);  // its output lives until the concatenation
    t.bwd_work = b.activation_bytes(channels * voxels) + b.activation_bytes(channels_below * voxels_below);
  }
  b.add(std::move(t));
}

// Decoder stage `dd`'s concatenation of the upsampled features with encoder stage e's skip.
void add_unet_concat(Builder& b, int64_t channels, int64_t voxels, int dd, int e) {
  Op c = b.make("decoder." + std::to_string(dd) + ".concat");
  // Read by the first conv (under CPU autocast: its half copy of the fp32 concat).
  c.saved = b.activation_bytes(2 * channels * voxels);
  c.hold_tag = e;  // the skip half of its gradient waits for the encoder
  if (b.fp32_tconv) {
    // fp32 transposed-conv output and the promoted fp32 concat
    c.fwd_work = b.fp32_bytes(channels * voxels) + b.fp32_bytes(2 * channels * voxels);
    c.hold = b.activation_bytes(channels * voxels);  // the skip's gradient, cast back to half
  } else {
    c.hold = b.activation_bytes(2 * channels * voxels);  // a view of the concat's gradient: the whole buffer stays
  }
  b.add(std::move(c));
}

// Decoder stage `dd`'s 1x1 segmentation head; its voxels join the loss's scales when the loss weighs them.
void add_unet_seg_head(Builder& b, int64_t channels, int64_t voxels, int classes, int dd, bool last,
                       bool deep_supervision, std::vector<int64_t>& loss_vox) {
  Op h = b.make("decoder." + std::to_string(dd) + ".seg_head");
  h.params = channels * classes + classes;
  h.largest_param = channels * classes;
  h.macs = channels * classes * voxels;
  h.half_weights = b.half(h.params);
  // oneDNN reorders the head's input to its blocked layout and writes the output padded to 16 channels.
  if (b.step.cpu)
    h.fwd_work = b.activation_bytes(channels * voxels) + b.activation_bytes((classes + 15) / 16 * 16 * voxels);
  h.saved = b.activation_bytes(classes * voxels);  // the logits stay referenced by the training step
  // nnU-Net weights deep-supervision terms 1/2^i and sets the lowest resolution's to 0.
  const bool in_loss = last || !deep_supervision || dd > 0;
  if (in_loss) {
    h.loss_grad = b.fp32_bytes(classes * voxels);
    loss_vox.push_back(voxels);
  }
  h.bwd_work = b.activation_bytes(channels * voxels);
  b.add(std::move(h));
}

// The decoder's ops, bottom up; returns the voxels of each scale the loss reads.
std::vector<int64_t> add_unet_decoder(Builder& b, const UnetGrid& g, int classes, bool deep_supervision,
                                      bool encoder_checkpointed) {
  const ArchitecturePlan& a = b.a;
  const int n_stages = a.n_stages;
  const auto& dec = a.n_conv_per_stage_decoder;
  std::vector<int64_t> loss_vox;
  for (int dd = 0; dd + 1 < n_stages; ++dd) {
    const int e = n_stages - 2 - dd;  // encoder stage joined here
    // This decoder stage works at encoder stage e's channels and voxels; its input comes from the stage below.
    const int64_t channels = a.features_per_stage[e], voxels = g.vox[e];
    add_unet_transposed_conv(b, g, dd, e, encoder_checkpointed);
    add_unet_concat(b, channels, voxels, dd, e);
    const std::string name = "decoder." + std::to_string(dd);
    const int n = dec.empty() ? 1 : dec[static_cast<std::size_t>(dd)];
    for (int j = 0; j < n; ++j)
      b.conv_norm_act(name + "." + std::to_string(j), j == 0 ? 2 * channels : channels, channels,
                      kvol(a.kernel_sizes[e]), voxels, voxels, true, b.halo_fraction(g.k_axis(e), g.len[e]));
    const bool last = dd + 2 == n_stages;
    if (deep_supervision || last) add_unet_seg_head(b, channels, voxels, classes, dd, last, deep_supervision, loss_vox);
  }
  return loss_vox;
}

}  // namespace

std::vector<Op> unet_ops(const ArchitecturePlan& a, const std::vector<int>& patch, int in_ch, int classes,
                         const MemoryOptions& opt, const StepSettings& step, bool checkpoint) {
  const bool residual = a.is_residual_encoder_unet();
  MEDSEG_CHECK(residual || a.is_plain_unet(), "memory model: unsupported network '", a.network_class_name, "'");
  Builder b{a, step, step.bytes_per_activation == 2, checkpoint, {}};
  b.fp32_tconv = step.cpu_autocast && opt.cpu_autocast_fp32_transposed_conv;
  b.dropout_p = unet_dropout_p(a);
  const UnetGrid g = unet_grid(a, patch, step);
  add_unet_encoder(b, g, in_ch, residual, /*stem=*/residual);

  // Only the encoder is ever checkpointed (NetworkBuildOptions::checkpoint_encoder).
  const bool encoder_checkpointed = b.checkpoint;
  b.checkpoint = false;
  b.segment = -1;
  const std::vector<int64_t> loss_vox = add_unet_decoder(b, g, classes, opt.deep_supervision, encoder_checkpointed);
  b.segment = -1;
  Op l = loss_op(loss_vox, classes, step);
  l.segment = -1;
  b.ops.push_back(l);
  return b.ops;
}

std::vector<Op> residual_stages_ops(const ArchitecturePlan& a, const std::vector<int>& patch, int in_ch,
                                    const StepSettings& step) {
  Builder b{a, step, step.bytes_per_activation == 2, /*checkpoint=*/false, {}};
  add_unet_encoder(b, unet_grid(a, patch, step), in_ch, /*residual=*/true, /*stem=*/false);
  for (Op& o : b.ops) o.tag = -1;  // no decoder takes their outputs as skips
  return b.ops;
}

}  // namespace medseg::planning::detail
