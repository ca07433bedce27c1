#include "inference/sliding_window.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/padding.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/progress.h"
#include "core/torch_memory.h"
#include "planning/memory_check.h"

namespace medseg::inference {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Tile positions along one axis, as a double.
double positions(int64_t image_size, int64_t patch, double step_size) {
  if (image_size < patch) throw Error("sliding window: image smaller than the patch");
  return std::ceil(static_cast<double>(image_size - patch) / (static_cast<double>(patch) * step_size)) + 1;
}

}  // namespace

void check_step_size(double step_size, const std::string& what) {
  if (!(step_size > 0 && step_size <= 1))  // NaN fails both comparisons
    throw Error(what + " " + number(step_size) + " is not in (0, 1] (the step between tiles as a fraction of the patch; "
                "nnU-Net's default is 0.5)");
}

double tile_count(const std::vector<int64_t>& image_size, const std::vector<int64_t>& patch, double step_size) {
  if (image_size.size() != patch.size()) throw Error("sliding window: image and patch dims differ");
  double n = 1;
  for (size_t d = 0; d < patch.size(); ++d) n *= positions(image_size[d], patch[d], step_size);
  return n;
}

std::vector<std::vector<int64_t>> compute_steps(const std::vector<int64_t>& image_size,
                                                const std::vector<int64_t>& patch, double step_size) {
  if (image_size.size() != patch.size()) throw Error("sliding window: image and patch dims differ");
  check_step_size(step_size, "sliding window: step_size");
  std::vector<std::vector<int64_t>> steps;
  for (size_t d = 0; d < patch.size(); ++d) {
    const auto n = static_cast<int64_t>(positions(image_size[d], patch[d], step_size));
    const double actual = n > 1 ? static_cast<double>(image_size[d] - patch[d]) / static_cast<double>(n - 1) : 0.0;
    std::vector<int64_t> s;
    for (int64_t i = 0; i < n; ++i) s.push_back(static_cast<int64_t>(std::nearbyint(actual * static_cast<double>(i))));
    steps.push_back(s);
  }
  return steps;
}

at::Tensor gaussian_importance_map(const std::vector<int64_t>& patch, double sigma_scale, double value_scaling) {
  at::Tensor map = at::ones({1}, at::kDouble);
  for (int64_t n : patch) {
    const double sigma = static_cast<double>(n) * sigma_scale;
    const int64_t center = n / 2;
    const int64_t radius = static_cast<int64_t>(4.0 * sigma + 0.5);  // scipy's truncate=4
    at::Tensor g = at::zeros({n}, at::kDouble);
    auto acc = g.accessor<double, 1>();
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(i - center);
      if (std::abs(i - center) <= radius) acc[i] = std::exp(-d * d / (2 * sigma * sigma));
    }
    map = map.unsqueeze(-1) * g;  // outer product, building (n0, n1, ...)
  }
  map = map.reshape(std::vector<int64_t>(patch.begin(), patch.end()));
  map = map / map.max() * value_scaling;
  const at::Tensor nonzero_min = map.masked_select(map > 0).min();
  map = at::where(map == 0, nonzero_min, map);
  return map.to(at::kFloat);
}

namespace {

struct Tile {
  std::vector<int64_t> start;
};

// Every combination of the mirror axes (the empty one included): 2^k flips.
std::vector<std::vector<int64_t>> mirror_sets(const std::vector<int64_t>& axes) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t m = 0; m < (int64_t{1} << axes.size()); ++m) {
    std::vector<int64_t> s;
    for (size_t k = 0; k < axes.size(); ++k)
      if (m & (int64_t{1} << k)) s.push_back(axes[k]);
    out.push_back(s);
  }
  return out;
}

std::vector<int64_t> shifted(const std::vector<int64_t>& axes, int64_t by) {
  std::vector<int64_t> o;
  for (auto a : axes) o.push_back(a + by);
  return o;
}

}  // namespace

namespace {

// The tile list (a Tile per position: its vector and the vector's heap block) and the positions per
// axis must fit the host's memory: a tiny step size would otherwise allocate without bound.
void check_tiles_fit(const std::vector<int64_t>& size, const std::vector<int64_t>& patch, double step_size) {
  check_step_size(step_size, "sliding window: step_size");
  const double tiles = tile_count(size, patch, step_size);
  const double per_tile = static_cast<double>(sizeof(Tile) + 2 * patch.size() * sizeof(int64_t));
  std::string shape;
  for (size_t d = 0; d < size.size(); ++d) shape += (d ? ", " : "") + std::to_string(size[d]);
  planning::check_bytes_fit(tiles * per_tile,
                            "the list of " + number(tiles) + " tiles (step_size " + number(step_size) + " over an image of [" + shape + "])",
                            device_memory_limit("cpu"), "", "sliding window", "a larger -step_size makes fewer tiles");
}

}  // namespace

struct SlidingWindow::Impl {
  SlidingWindowOptions o;
  int64_t classes = 0;
  int64_t spatial = 0;
  bool slice_mode = false;  // a 2D network on a 3D image: tiles of one slice
  std::vector<int64_t> patch, mirror_axes, before, original, size;
  at::Tensor image;  // padded, on the device
  std::vector<std::vector<int64_t>> steps;
  int64_t shard_axis = 0;

  std::vector<at::indexing::TensorIndex> region(const Tile& t, const std::vector<int64_t>& origin) const {
    std::vector<at::indexing::TensorIndex> idx{at::indexing::Slice()};
    for (int64_t d = 0; d < spatial; ++d)
      idx.emplace_back(at::indexing::Slice(t.start[d] - origin[d], t.start[d] - origin[d] + patch[d]));
    return idx;
  }
  std::vector<Tile> tiles(size_t first, size_t last) const;  // positions [first, last) along shard_axis
};

std::vector<Tile> SlidingWindow::Impl::tiles(size_t first, size_t last) const {
  std::vector<std::vector<int64_t>> s = steps;
  auto& a = s[static_cast<size_t>(shard_axis)];
  a = std::vector<int64_t>(a.begin() + static_cast<std::ptrdiff_t>(first), a.begin() + static_cast<std::ptrdiff_t>(last));
  std::vector<Tile> out;
  if (spatial == 3) {
    for (auto z : s[0])
      for (auto y : s[1])
        for (auto x : s[2]) out.push_back({{z, y, x}});
  } else {
    for (auto y : s[0])
      for (auto x : s[1]) out.push_back({{y, x}});
  }
  return out;
}

SlidingWindow::SlidingWindow(const at::Tensor& image_in, int64_t num_classes, const SlidingWindowOptions& o)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.o = o;
  m.classes = num_classes;
  m.spatial = image_in.dim() - 1;
  const int64_t pd = static_cast<int64_t>(o.patch_size.size());
  if (m.spatial != 2 && m.spatial != 3) throw Error("sliding window: image must be (C, y, x) or (C, z, y, x)");
  if (pd != m.spatial && !(pd == 2 && m.spatial == 3)) throw Error("sliding window: patch dims do not fit the image");
  m.slice_mode = pd == 2 && m.spatial == 3;
  m.patch = o.patch_size;
  if (m.slice_mode) m.patch.insert(m.patch.begin(), 1);
  for (auto a : o.mirror_axes)
    if (a < 0 || a >= pd) throw Error("sliding window: mirror axis out of range");
  m.mirror_axes = m.slice_mode ? shifted(o.mirror_axes, 1) : o.mirror_axes;

  // Pad (centred, zeros) where the image is smaller than the patch.
  std::vector<int64_t> pad;  // torch order: last axis first, (before, after)
  m.before.assign(static_cast<size_t>(m.spatial), 0);
  for (int64_t d = m.spatial - 1; d >= 0; --d) {
    const int64_t diff = std::max<int64_t>(0, m.patch[d] - image_in.size(d + 1));
    m.before[d] = diff / 2;
    pad.push_back(diff / 2);
    pad.push_back(diff - diff / 2);
  }
  m.original.assign(image_in.sizes().begin() + 1, image_in.sizes().end());
  m.image = at::constant_pad_nd(image_in.to(o.device, at::kFloat), pad, 0.0);
  m.size.assign(m.image.sizes().begin() + 1, m.image.sizes().end());
  check_tiles_fit(m.size, m.patch, o.step_size);
  m.steps = compute_steps(m.size, m.patch, o.step_size);
  // The axis with the most tile positions (ties: the longer one) is the one shards split.
  for (int64_t d = 1; d < m.spatial; ++d) {
    const auto n = m.steps[d].size(), best = m.steps[m.shard_axis].size();
    if (n > best || (n == best && m.size[d] > m.size[m.shard_axis])) m.shard_axis = d;
  }
}

SlidingWindow::~SlidingWindow() = default;

namespace {
// Positions [first, last) of `n` that shard `index` of `count` takes.
std::pair<size_t, size_t> shard_positions(size_t n, int index, int count) {
  if (count < 1 || index < 0 || index >= count) throw Error("sliding window: shard index out of range");
  return {n * static_cast<size_t>(index) / static_cast<size_t>(count),
          n * static_cast<size_t>(index + 1) / static_cast<size_t>(count)};
}
}  // namespace

SlidingWindow::Slab SlidingWindow::slab(int index, int count) const {
  const Impl& m = *impl_;
  const auto& pos = m.steps[static_cast<size_t>(m.shard_axis)];
  const auto [first, last] = shard_positions(pos.size(), index, count);
  Slab s;
  s.axis = m.shard_axis;
  if (first < last) {
    s.begin = pos[first];
    s.end = pos[last - 1] + m.patch[static_cast<size_t>(m.shard_axis)];
  }
  return s;
}

std::pair<at::Tensor, at::Tensor> SlidingWindow::accumulate(const NetworkFn& net, int index, int count) const {
  const Impl& m = *impl_;
  const Slab sl = slab(index, count);
  if (sl.empty()) return {};
  const auto [first, last_pos] = shard_positions(m.steps[static_cast<size_t>(m.shard_axis)].size(), index, count);
  const std::vector<Tile> tiles = m.tiles(first, last_pos);
  std::vector<int64_t> origin(static_cast<size_t>(m.spatial), 0), extent = m.size;
  origin[static_cast<size_t>(sl.axis)] = sl.begin;
  extent[static_cast<size_t>(sl.axis)] = sl.end - sl.begin;

  const auto acc_type = m.o.half_accumulators ? at::kHalf : at::kFloat;
  std::vector<int64_t> out_shape{m.classes};
  out_shape.insert(out_shape.end(), extent.begin(), extent.end());
  at::Tensor logits = at::zeros(out_shape, m.image.options().dtype(acc_type));
  at::Tensor weights = at::zeros(extent, m.image.options().dtype(acc_type));
  at::Tensor gauss = m.o.use_gaussian ? gaussian_importance_map(m.patch).to(m.o.device) : at::ones(m.patch, m.image.options());

  const auto flips = mirror_sets(m.mirror_axes);
  const int64_t copies = static_cast<int64_t>(flips.size());
  const int64_t tiles_per_pass = std::max<int64_t>(1, m.o.max_batch / copies);
  const std::vector<int64_t> zero(static_cast<size_t>(m.spatial), 0);
  ProgressBar bar("sliding window", static_cast<int64_t>(tiles.size()), m.o.progress);
  for (size_t first_tile = 0; first_tile < tiles.size(); first_tile += static_cast<size_t>(tiles_per_pass)) {
    const size_t last = std::min(tiles.size(), first_tile + static_cast<size_t>(tiles_per_pass));
    std::vector<at::Tensor> batch;
    for (size_t t = first_tile; t < last; ++t) {
      const at::Tensor crop = m.image.index(m.region(tiles[t], zero));
      for (const auto& f : flips) batch.push_back(f.empty() ? crop : crop.flip(shifted(f, 1)));
    }
    at::Tensor x = at::stack(batch);
    if (m.slice_mode) x = x.squeeze(2);
    at::Tensor y = net(x);
    if (m.slice_mode) y = y.unsqueeze(2);
    y = y.to(at::kFloat);
    for (size_t t = first_tile; t < last; ++t) {
      at::Tensor sum;
      for (int64_t c = 0; c < copies; ++c) {
        at::Tensor yi = y[static_cast<int64_t>(t - first_tile) * copies + c];
        const auto& f = flips[static_cast<size_t>(c)];
        if (!f.empty()) yi = yi.flip(shifted(f, 1));
        sum = sum.defined() ? sum + yi : yi;
      }
      sum = sum / static_cast<double>(copies) * gauss;
      auto r = m.region(tiles[t], origin);
      logits.index(r).add_(sum.to(acc_type));
      r.erase(r.begin());
      weights.index(r).add_(gauss.to(acc_type));
      bar.tick();
    }
  }
  bar.finish();
  return {logits, weights};
}

std::pair<at::Tensor, at::Tensor> SlidingWindow::zero_accumulators() const {
  const Impl& m = *impl_;
  std::vector<int64_t> out_shape{m.classes};
  out_shape.insert(out_shape.end(), m.size.begin(), m.size.end());
  return {at::zeros(out_shape, at::kFloat), at::zeros(m.size, at::kFloat)};
}

at::Tensor SlidingWindow::finish(const at::Tensor& logits, const at::Tensor& weights) const {
  const Impl& m = *impl_;
  at::Tensor out = logits.to(at::kFloat) / weights.to(at::kFloat);
  if (!at::isfinite(out).all().item<bool>())
    throw Error("sliding window: non-finite logits (fp16 accumulator overflow or a broken network)");
  std::vector<at::indexing::TensorIndex> crop{at::indexing::Slice()};
  for (int64_t d = 0; d < m.spatial; ++d)
    crop.emplace_back(at::indexing::Slice(m.before[d], m.before[d] + m.original[d]));
  return out.index(crop).to(at::kCPU).contiguous();
}

at::Tensor predict_sliding_window(const NetworkFn& net, const at::Tensor& image, int64_t num_classes,
                                  const SlidingWindowOptions& o) {
  const SlidingWindow window(image, num_classes, o);
  const auto [logits, weights] = window.accumulate(net, 0, 1);
  return window.finish(logits, weights);
}

}  // namespace medseg::inference
