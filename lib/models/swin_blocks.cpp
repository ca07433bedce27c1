#include "models/swin_blocks.h"

#include <torch/nn/functional/padding.h>

#include "models/activation_checkpoint.h"

namespace medseg::models {
namespace {

using torch::indexing::None;
using torch::indexing::Slice;

// Python's slice(start, stop) on a length-n axis with None as nullopt: [begin, end) after clamping.
std::pair<int64_t, int64_t> py_slice(int64_t n, c10::optional<int64_t> start, c10::optional<int64_t> stop) {
  auto norm = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  const int64_t b = start ? norm(*start) : 0;
  const int64_t e = stop ? norm(*stop) : n;
  return {b, std::max(b, e)};
}

torch::Tensor relative_position_index(const Shape& window) {
  const size_t d = window.size();
  const int64_t n = product(window);
  std::vector<Shape> coords(n, Shape(d));
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = i;
    for (size_t a = d; a-- > 0;) {
      coords[i][a] = r % window[a];
      r /= window[a];
    }
  }
  Shape mult(d, 1);
  for (size_t a = d - 1; a-- > 0;) mult[a] = mult[a + 1] * (2 * window[a + 1] - 1);
  std::vector<int64_t> idx(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t v = 0;
      for (size_t a = 0; a < d; ++a) v += (coords[i][a] - coords[j][a] + window[a] - 1) * mult[a];
      idx[i * n + j] = v;
    }
  return torch::tensor(idx, torch::kLong).view({n, n});
}

}  // namespace

std::pair<Shape, Shape> get_window_size(const Shape& sizes, const Shape& window, const Shape& shift) {
  Shape w = window, s = shift;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] <= window[i]) {
      w[i] = sizes[i];
      s[i] = 0;
    }
  return {w, s};
}

torch::Tensor window_partition(const torch::Tensor& x, const Shape& window) {
  const int64_t d = static_cast<int64_t>(window.size());
  Shape view{x.size(0)};
  for (int64_t a = 0; a < d; ++a) {
    view.push_back(x.size(a + 1) / window[a]);
    view.push_back(window[a]);
  }
  view.push_back(x.size(-1));
  Shape perm{0};
  for (int64_t a = 0; a < d; ++a) perm.push_back(1 + 2 * a);
  for (int64_t a = 0; a < d; ++a) perm.push_back(2 + 2 * a);
  perm.push_back(2 * d + 1);
  return x.view(view).permute(perm).contiguous().view({-1, product(window), x.size(-1)});
}

torch::Tensor window_reverse(const torch::Tensor& windows, const Shape& window, const Shape& b_and_spatial) {
  const int64_t d = static_cast<int64_t>(window.size());
  Shape view{b_and_spatial[0]};
  for (int64_t a = 0; a < d; ++a) view.push_back(b_and_spatial[a + 1] / window[a]);
  for (int64_t a = 0; a < d; ++a) view.push_back(window[a]);
  view.push_back(-1);
  Shape perm{0};
  for (int64_t a = 0; a < d; ++a) {
    perm.push_back(1 + a);
    perm.push_back(1 + d + a);
  }
  perm.push_back(2 * d + 1);
  Shape out = b_and_spatial;
  out.push_back(-1);
  return windows.view(view).permute(perm).contiguous().view(out);
}

torch::Tensor compute_mask(const Shape& padded, const Shape& window, const Shape& shift, const torch::Device& device) {
  const size_t d = padded.size();
  // Per axis the three regions MONAI/Swin assign (later ones overwrite earlier where they overlap,
  // which happens on axes whose shift is 0).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> regions(d);
  for (size_t a = 0; a < d; ++a) {
    const int64_t n = padded[a], w = window[a], s = shift[a];
    regions[a] = {py_slice(n, c10::nullopt, -w), py_slice(n, -w, -s), py_slice(n, -s, c10::nullopt)};
  }
  Shape shape{1};
  shape.insert(shape.end(), padded.begin(), padded.end());
  shape.push_back(1);
  auto img = torch::zeros(shape);
  float cnt = 0;
  const int64_t combos = d == 3 ? 27 : 9;
  for (int64_t c = 0; c < combos; ++c, cnt += 1) {
    std::vector<at::indexing::TensorIndex> ix{Slice()};
    int64_t r = c;
    std::vector<int64_t> pick(d);
    for (size_t a = d; a-- > 0;) {
      pick[a] = r % 3;
      r /= 3;
    }
    for (size_t a = 0; a < d; ++a) ix.emplace_back(Slice(regions[a][pick[a]].first, regions[a][pick[a]].second));
    ix.emplace_back(Slice());
    img.index_put_(ix, cnt);
  }
  auto mw = window_partition(img, window).squeeze(-1);
  auto m = mw.unsqueeze(1) - mw.unsqueeze(2);
  m = m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0);
  return m.to(device);
}

torch::Tensor drop_path(const torch::Tensor& x, double p, bool training) {
  if (p == 0.0 || !training) return x;
  const double keep = 1.0 - p;
  Shape shape(x.dim(), 1);
  shape[0] = x.size(0);
  auto r = x.new_empty(shape).bernoulli_(keep);
  if (keep > 0.0) r.div_(keep);
  return x * r;
}

WindowAttentionImpl::WindowAttentionImpl(WindowAttentionOptions options_) : options(std::move(options_)) { reset(); }

void WindowAttentionImpl::reset() {
  const int64_t dim = options.dim(), heads = options.num_heads();
  scale_ = std::pow(static_cast<double>(dim / heads), -0.5);
  int64_t table = 1;
  for (int64_t w : options.window_size()) table *= 2 * w - 1;
  table_ = register_parameter("relative_position_bias_table", torch::zeros({table, heads}));
  index_ = register_buffer("relative_position_index", relative_position_index(options.window_size()));
  qkv_ = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(dim, 3 * dim).bias(options.qkv_bias())));
  proj_ = register_module("proj", torch::nn::Linear(dim, dim));
  torch::NoGradGuard ng;
  table_.normal_(0.0, 0.02).clamp_(-2.0, 2.0);  // trunc_normal_(std=0.02, a=-2, b=2)
}

void WindowAttentionImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::WindowAttention(dim=" << options.dim() << ", num_heads=" << options.num_heads()
         << ", window_size=";
  print_shape(stream, options.window_size());
  stream << ", qkv_bias=" << (options.qkv_bias() ? "true" : "false") << ", attn_drop=" << options.attn_drop()
         << ", proj_drop=" << options.proj_drop() << ")";
}

torch::Tensor WindowAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t b = x.size(0), n = x.size(1), c = x.size(2);
  const int64_t heads = options.num_heads();
  auto qkv = qkv_(x).reshape({b, n, 3, heads, c / heads}).permute({2, 0, 3, 1, 4});
  auto q = qkv[0] * scale_;
  auto attn = q.matmul(qkv[1].transpose(-2, -1));
  // MONAI takes the top-left n x n block of the full-window index when the window shrank.
  auto idx = index_.index({Slice(0, n), Slice(0, n)}).reshape(-1);
  auto bias = table_.index_select(0, idx).reshape({n, n, -1}).permute({2, 0, 1});
  // Bias and shift mask are added to the (windows x heads x n x n) scores in place: they are the
  // largest tensors of the network, and on the CPU each fresh copy costs its page faults. Safe for
  // autograd: matmul saves its inputs, not its output, and an addend's gradient is the score
  // gradient summed over the broadcast axes.
  attn.add_(bias.unsqueeze(0).to(attn.dtype()));
  if (mask.defined()) {
    const int64_t nw = mask.size(0);
    attn.view({b / nw, nw, options.num_heads(), n, n}).add_(mask.unsqueeze(1).to(attn.dtype()));
  }
  attn = torch::dropout(torch::softmax(attn, -1), options.attn_drop(), is_training()).to(qkv.dtype());
  auto out = attn.matmul(qkv[2]).transpose(1, 2).reshape({b, n, c});
  return torch::dropout(proj_(out), options.proj_drop(), is_training());
}

SwinMlpImpl::SwinMlpImpl(SwinMlpOptions options_) : options(options_) { reset(); }

void SwinMlpImpl::reset() {
  linear1_ = register_module("linear1", torch::nn::Linear(options.dim(), options.hidden_dim()));
  linear2_ = register_module("linear2", torch::nn::Linear(options.hidden_dim(), options.dim()));
}

void SwinMlpImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::SwinMlp(dim=" << options.dim() << ", hidden_dim=" << options.hidden_dim()
         << ", dropout=" << options.dropout() << ")";
}

torch::Tensor SwinMlpImpl::forward(const torch::Tensor& x) {
  auto h = torch::dropout(torch::gelu(linear1_(x)), options.dropout(), is_training());
  return torch::dropout(linear2_(h), options.dropout(), is_training());
}

SwinTransformerBlockImpl::SwinTransformerBlockImpl(SwinTransformerBlockOptions options_)
    : options(std::move(options_)) {
  reset();
}

void SwinTransformerBlockImpl::reset() {
  const int64_t dim = options.dim();
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  attn_ =
      register_module("attn", WindowAttention(WindowAttentionOptions(dim, options.num_heads(), options.window_size())
                                                  .attn_drop(options.attn_drop())
                                                  .proj_drop(options.drop())));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  mlp_ = register_module(
      "mlp", SwinMlp(SwinMlpOptions(dim, static_cast<int64_t>(dim * options.mlp_ratio())).dropout(options.drop())));
}

void SwinTransformerBlockImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::SwinTransformerBlock(dim=" << options.dim() << ", num_heads=" << options.num_heads()
         << ", window_size=";
  print_shape(stream, options.window_size());
  stream << ", shift_size=";
  print_shape(stream, options.shift_size());
  stream << ", mlp_ratio=" << options.mlp_ratio() << ", drop=" << options.drop()
         << ", attn_drop=" << options.attn_drop() << ", drop_path=" << options.drop_path()
         << ", use_checkpoint=" << (options.use_checkpoint() ? "true" : "false") << ")";
}

torch::Tensor SwinTransformerBlockImpl::forward_part1(const torch::Tensor& input, const torch::Tensor& mask) {
  const int64_t d = input.dim() - 2;
  const Shape sizes = input.sizes().slice(1, d).vec();
  const int64_t b = input.size(0), c = input.size(-1);
  auto x = norm1_(input);
  auto [w, s] = get_window_size(sizes, options.window_size(), options.shift_size());
  Shape pads(d);
  bool padded = false;
  std::vector<int64_t> pad_arg{0, 0};  // F.pad order: last dim first
  for (int64_t a = d - 1; a >= 0; --a) {
    pads[a] = (w[a] - sizes[a] % w[a]) % w[a];
    padded |= pads[a] > 0;
    pad_arg.push_back(0);
    pad_arg.push_back(pads[a]);
  }
  if (padded) x = torch::constant_pad_nd(x, pad_arg, 0);
  Shape dims{b}, roll_dims, back, fwd;
  for (int64_t a = 0; a < d; ++a) {
    dims.push_back(x.size(a + 1));
    roll_dims.push_back(a + 1);
    fwd.push_back(-s[a]);
    back.push_back(s[a]);
  }
  const bool shifted = std::any_of(s.begin(), s.end(), [](int64_t v) { return v > 0; });
  if (shifted) x = torch::roll(x, fwd, roll_dims);
  auto windows = attn_(window_partition(x, w), shifted ? mask : torch::Tensor());
  Shape wview{-1};
  wview.insert(wview.end(), w.begin(), w.end());
  wview.push_back(c);
  x = window_reverse(windows.view(wview), w, dims);
  if (shifted) x = torch::roll(x, back, roll_dims);
  if (padded) {
    std::vector<at::indexing::TensorIndex> ix{Slice()};
    for (int64_t a = 0; a < d; ++a) ix.emplace_back(Slice(0, sizes[a]));
    ix.emplace_back(Slice());
    x = x.index(ix).contiguous();
  }
  return x;
}

torch::Tensor SwinTransformerBlockImpl::forward_part2(const torch::Tensor& x) {
  return drop_path(mlp_(norm2_(x)), options.drop_path(), is_training());
}

torch::Tensor SwinTransformerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const bool ckpt = options.use_checkpoint() && is_training();
  torch::Tensor y;
  if (ckpt) {
    std::vector<torch::Tensor> p1;
    for (auto& p : norm1_->parameters()) p1.push_back(p);
    for (auto& p : attn_->parameters()) p1.push_back(p);
    auto self = std::dynamic_pointer_cast<SwinTransformerBlockImpl>(shared_from_this());
    y = activation_checkpoint(
        [self](const std::vector<torch::Tensor>& in) {
          return std::vector<torch::Tensor>{self->forward_part1(in[0], in[1])};
        },
        {x, mask}, p1)[0];
  } else {
    y = forward_part1(x, mask);
  }
  auto h = x + drop_path(y, options.drop_path(), is_training());
  if (ckpt) {
    std::vector<torch::Tensor> p2;
    for (auto& p : norm2_->parameters()) p2.push_back(p);
    for (auto& p : mlp_->parameters()) p2.push_back(p);
    auto self = std::dynamic_pointer_cast<SwinTransformerBlockImpl>(shared_from_this());
    return h + activation_checkpoint(
                   [self](const std::vector<torch::Tensor>& in) {
                     return std::vector<torch::Tensor>{self->forward_part2(in[0])};
                   },
                   {h}, p2)[0];
  }
  return h + forward_part2(h);
}

PatchMergingImpl::PatchMergingImpl(PatchMergingOptions options_) : options(options_) { reset(); }

void PatchMergingImpl::reset() {
  const int64_t m = options.spatial_dims() == 3 ? 8 : 4, dim = options.dim();
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({m * dim})));
  reduction_ = register_module("reduction", torch::nn::Linear(torch::nn::LinearOptions(m * dim, 2 * dim).bias(false)));
}

torch::Tensor merge_subgrids(torch::Tensor x, int dims) {
  // Odd sizes are padded by one (SwinUNETR's input check makes them even).
  std::vector<int64_t> pad_arg{0, 0};
  bool odd = false;
  for (int a = dims; a >= 1; --a) {
    pad_arg.push_back(0);
    pad_arg.push_back(x.size(a) % 2);
    odd |= x.size(a) % 2 == 1;
  }
  if (odd) x = torch::constant_pad_nd(x, pad_arg, 0);
  std::vector<torch::Tensor> parts;
  if (dims == 3) {
    static const int kOffsets[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1},
                                       {1, 1, 0}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};
    for (const auto& o : kOffsets)
      parts.push_back(x.slice(1, o[0], None, 2).slice(2, o[1], None, 2).slice(3, o[2], None, 2));
  } else {
    static const int kOffsets[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};  // (h, w)
    for (const auto& o : kOffsets) parts.push_back(x.slice(1, o[0], None, 2).slice(2, o[1], None, 2));
  }
  return torch::cat(parts, -1);
}

void PatchMergingImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::PatchMerging(dim=" << options.dim() << ", spatial_dims=" << options.spatial_dims() << ")";
}

torch::Tensor PatchMergingImpl::forward(torch::Tensor x) {
  return reduction_(norm_(merge_subgrids(x, options.spatial_dims())));
}

BasicLayerImpl::BasicLayerImpl(BasicLayerOptions options_) : options(std::move(options_)) { reset(); }

void BasicLayerImpl::reset() {
  const Shape& window = options.window_size();
  shift_.clear();
  for (int64_t w : window) shift_.push_back(w / 2);
  const Shape no_shift(window.size(), 0);
  blocks_ = torch::nn::ModuleList();
  for (int64_t i = 0; i < options.depth(); ++i)
    blocks_->push_back(SwinTransformerBlock(SwinTransformerBlockOptions(options.dim(), options.num_heads(), window)
                                                .shift_size(i % 2 == 0 ? no_shift : shift_)
                                                .mlp_ratio(options.mlp_ratio())
                                                .drop(options.drop())
                                                .attn_drop(options.attn_drop())
                                                .drop_path(options.drop_path()[i])
                                                .use_checkpoint(options.use_checkpoint())));
  register_module("blocks", blocks_);
  downsample_ =
      register_module("downsample", PatchMerging(PatchMergingOptions(options.dim(), static_cast<int>(window.size()))));
}

void BasicLayerImpl::pretty_print(std::ostream& stream) const {
  stream << "medseg::models::BasicLayer(dim=" << options.dim() << ", depth=" << options.depth()
         << ", num_heads=" << options.num_heads() << ", window_size=";
  print_shape(stream, options.window_size());
  stream << ", mlp_ratio=" << options.mlp_ratio() << ", drop=" << options.drop()
         << ", attn_drop=" << options.attn_drop()
         << ", use_checkpoint=" << (options.use_checkpoint() ? "true" : "false") << ")";
}

void BasicLayerImpl::set_checkpointing(bool on) {
  options.use_checkpoint(on);
  for (const auto& b : *blocks_) b->as<SwinTransformerBlockImpl>()->options.use_checkpoint(on);
}

torch::Tensor BasicLayerImpl::forward(const torch::Tensor& input) {
  const int64_t d = input.dim() - 2;
  const Shape sizes = input.sizes().slice(2).vec();
  auto [w, s] = get_window_size(sizes, options.window_size(), shift_);
  Shape to_last{0}, to_first{0, d + 1}, padded;
  for (int64_t a = 0; a < d; ++a) {
    to_last.push_back(a + 2);
    to_first.push_back(a + 1);
    padded.push_back((sizes[a] + w[a] - 1) / w[a] * w[a]);
  }
  to_last.push_back(1);
  auto mask = compute_mask(padded, w, s, input.device());
  auto x = input.permute(to_last);
  for (const auto& blk : *blocks_) x = blk->as<SwinTransformerBlockImpl>()->forward(x, mask);
  Shape view{input.size(0)};
  view.insert(view.end(), sizes.begin(), sizes.end());
  view.push_back(-1);
  x = downsample_(x.reshape(view));
  return x.permute(to_first);
}

}  // namespace medseg::models
