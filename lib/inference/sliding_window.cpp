#include "inference/sliding_window.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/padding.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/strings.h"
#include "core_torch/torch_memory.h"
#include "planning/memory_check.h"

namespace medseg::inference {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Tile positions along one axis, as a double. A patch one voxel thick (a 2D network's slices) visits
// every position once, as nnU-Net's slice loop does (its step formula would repeat slices).
double positions(int64_t image_size, int64_t patch, double step_size) {
  MEDSEG_CHECK(image_size >= patch, "sliding window: image smaller than the patch");
  if (patch == 1) return static_cast<double>(image_size);
  return std::ceil(static_cast<double>(image_size - patch) / (static_cast<double>(patch) * step_size)) + 1;
}

}  // namespace

void check_step_size(double step_size, const std::string& what) {
  MEDSEG_CHECK(step_size > 0 && step_size <= 1,  // NaN fails both comparisons
               what, " ", number(step_size),
               " is not in (0, 1] (the step between tiles as a fraction of the patch; "
               "nnU-Net's default is 0.5)");
}

double tile_count(const std::vector<int64_t>& image_size, const std::vector<int64_t>& patch, double step_size) {
  MEDSEG_CHECK(image_size.size() == patch.size(), "sliding window: image and patch dims differ");
  double n = 1;
  for (size_t d = 0; d < patch.size(); ++d) n *= positions(image_size[d], patch[d], step_size);
  return n;
}

std::vector<std::vector<int64_t>> compute_steps(const std::vector<int64_t>& image_size,
                                                const std::vector<int64_t>& patch, double step_size) {
  MEDSEG_CHECK(image_size.size() == patch.size(), "sliding window: image and patch dims differ");
  check_step_size(step_size, "sliding window: step_size");
  std::vector<std::vector<int64_t>> steps;
  for (size_t d = 0; d < patch.size(); ++d) {
    const auto n = static_cast<int64_t>(positions(image_size[d], patch[d], step_size));
    const double actual = patch[d] == 1 ? 1.0
                          : n > 1       ? static_cast<double>(image_size[d] - patch[d]) / static_cast<double>(n - 1)
                                        : 0.0;
    std::vector<int64_t> s;
    for (int64_t i = 0; i < n; ++i) s.push_back(static_cast<int64_t>(std::nearbyint(actual * static_cast<double>(i))));
    steps.push_back(s);
  }
  return steps;
}

namespace {

// scipy.ndimage's 1D gaussian kernel (_gaussian_kernel1d, order 0) as gaussian_filter builds it:
// exp(-0.5 / sigma^2 * x^2) over x in [-radius, radius], radius = int(4 sigma + 0.5), divided by its sum.
std::vector<double> scipy_gaussian_kernel(double sigma) {
  const auto radius = static_cast<int64_t>(4.0 * sigma + 0.5);
  const double factor = -0.5 / (sigma * sigma);
  std::vector<double> k;
  double sum = 0;
  for (int64_t x = -radius; x <= radius; ++x) {
    k.push_back(std::exp(factor * static_cast<double>(x * x)));
    sum += k.back();
  }
  for (double& v : k) v /= sum;
  return k;
}

}  // namespace

at::Tensor gaussian_importance_map(const std::vector<int64_t>& patch, double sigma_scale, double value_scaling,
                                   at::ScalarType dtype) {
  // gaussian_filter of a unit impulse at patch // 2, mode 'constant': each axis multiplies the kernel's
  // value at the distance from the centre (zero beyond the radius) into the running product, in axis
  // order, in double, as scipy's separable passes do.
  at::Tensor map = at::ones({1}, at::kDouble);
  for (int64_t n : patch) {
    const std::vector<double> k = scipy_gaussian_kernel(static_cast<double>(n) * sigma_scale);
    const auto radius = static_cast<int64_t>(k.size() / 2);
    at::Tensor g = at::zeros({n}, at::kDouble);
    auto acc = g.accessor<double, 1>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t d = i - n / 2;
      if (std::abs(d) <= radius) acc[i] = k[static_cast<size_t>(d + radius)];
    }
    map = map.unsqueeze(-1) * g;  // outer product, building (n0, n1, ...)
  }
  map = map.reshape(std::vector<int64_t>(patch.begin(), patch.end()));
  map = map / (map.max() / value_scaling);  // nnU-Net's division, in double
  // Converted first, then zeros (a kernel truncated early, or fp16 underflow in the corners of large
  // patches) raised to the smallest nonzero value of the converted map: nnU-Net's order, so the fp16 map
  // is nnU-Net's fp16 map value for value.
  map = map.to(dtype);
  const at::Tensor zero = map == 0;
  if (zero.any().item<bool>()) map = at::where(zero, map.masked_select(~zero).min(), map);
  return map;
}

namespace {

struct Tile {
  std::vector<int64_t> start;
};

// Every combination of the mirror axes, in nnU-Net's order: none first, then
// itertools.combinations(axes, 1), (axes, 2), ... (the mirrored logits are summed in this order).
std::vector<std::vector<int64_t>> mirror_sets(const std::vector<int64_t>& axes) {
  std::vector<std::vector<int64_t>> out{{}};
  const size_t k = axes.size();
  for (size_t size = 1; size <= k; ++size) {
    std::vector<size_t> idx(size);
    for (size_t i = 0; i < size; ++i) idx[i] = i;
    while (true) {
      std::vector<int64_t> s;
      for (size_t i : idx) s.push_back(axes[i]);
      out.push_back(s);
      size_t i = size;  // the next combination in lexicographic order
      while (i > 0 && idx[i - 1] == k - size + i - 1) --i;
      if (i == 0) break;
      ++idx[i - 1];
      for (size_t j = i; j < size; ++j) idx[j] = idx[j - 1] + 1;
    }
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
  planning::check_bytes_fit(tiles * per_tile,
                            "the list of " + number(tiles) + " tiles (step_size " + number(step_size) +
                                " over an image of [" + join(size, ", ") + "])",
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
  // The gaussian importance map (or ones) on the accumulator device in the accumulators' type: made
  // once, not per row of a slab-wise prediction.
  at::Tensor gauss_acc;
  std::vector<std::vector<int64_t>> steps;
  int64_t shard_axis = 0;

  std::vector<at::indexing::TensorIndex> region(const Tile& t, const std::vector<int64_t>& origin) const {
    std::vector<at::indexing::TensorIndex> idx{at::indexing::Slice()};
    for (int64_t d = 0; d < spatial; ++d)
      idx.emplace_back(at::indexing::Slice(t.start[d] - origin[d], t.start[d] - origin[d] + patch[d]));
    return idx;
  }
  std::vector<Tile> tiles(size_t first, size_t last) const;  // positions [first, last) along shard_axis
  c10::Device accumulator_device() const { return o.accumulate_on_host ? c10::Device(c10::kCPU) : o.device; }
  at::ScalarType accumulator_type() const { return o.half_accumulators ? at::kHalf : at::kFloat; }
  // Zero accumulators (K, *extent) and (*extent) on the accumulator device.
  std::pair<at::Tensor, at::Tensor> zeros(const std::vector<int64_t>& extent) const;
  // Runs `tiles` through the network and adds their gaussian-weighted logits to accumulators whose
  // first voxel is the padded image's `origin`.
  struct Tally {
    int64_t done = 0, total = 0;  // tiles, for SlidingWindowOptions::on_tile
  };
  // The network's logits (float, on the accumulator device) for `batch`, in passes of max_batch.
  at::Tensor forward(const NetworkFn& net, const std::vector<at::Tensor>& batch) const;
  void add_tiles(const NetworkFn& net, const std::vector<Tile>& tiles, const std::vector<int64_t>& origin,
                 at::Tensor& logits, at::Tensor& weights, ProgressBar& bar, Tally& tally) const;
  // --verbose: the tiles, the network passes per tile and the seconds they took (scripts/bench/bench_predict.sh
  // turns them into GFLOP/s with the network's FLOPs per pass).
  void log_work(int64_t tiles, std::chrono::steady_clock::time_point since) const {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - since;
    spdlog::debug("sliding window: {} tile(s) of {}, {} network pass(es) each, {:.3f} s", tiles, join(patch, "x"),
                  mirror_sets(mirror_axes).size(), took.count());
  }
  // logits / weights of accumulators starting at padded `origin`, checked finite, cropped to the
  // unpadded image, on the CPU.
  at::Tensor finished(const at::Tensor& logits, const at::Tensor& weights, const std::vector<int64_t>& origin) const;
};

std::pair<at::Tensor, at::Tensor> SlidingWindow::Impl::zeros(const std::vector<int64_t>& extent) const {
  std::vector<int64_t> out_shape{classes};
  out_shape.insert(out_shape.end(), extent.begin(), extent.end());
  const auto opts = at::TensorOptions().device(accumulator_device()).dtype(accumulator_type());
  return {at::zeros(out_shape, opts), at::zeros(extent, opts)};
}

at::Tensor SlidingWindow::Impl::forward(const NetworkFn& net, const std::vector<at::Tensor>& batch) const {
  // At most max_batch inputs per pass: with max_batch 1 each tile and each mirrored copy runs alone, as
  // nnU-Net runs them (a batched convolution may round differently).
  const auto step = static_cast<size_t>(std::max<int64_t>(1, o.max_batch));
  std::vector<at::Tensor> out;
  for (size_t first = 0; first < batch.size(); first += step) {
    const size_t last = std::min(batch.size(), first + step);
    at::Tensor x = at::stack(std::vector<at::Tensor>(batch.begin() + static_cast<std::ptrdiff_t>(first),
                                                     batch.begin() + static_cast<std::ptrdiff_t>(last)))
                       .to(o.device);
    if (slice_mode) x = x.squeeze(2);
    at::Tensor y = net(x);
    if (slice_mode) y = y.unsqueeze(2);
    out.push_back(y.to(accumulator_device(), at::kFloat));
  }
  return out.size() == 1 ? out[0] : at::cat(out);
}

void SlidingWindow::Impl::add_tiles(const NetworkFn& net, const std::vector<Tile>& tiles,
                                    const std::vector<int64_t>& origin, at::Tensor& logits, at::Tensor& weights,
                                    ProgressBar& bar, Tally& tally) const {
  const auto flips = mirror_sets(mirror_axes);
  const int64_t copies = static_cast<int64_t>(flips.size());
  const int64_t tiles_per_pass = std::max<int64_t>(1, o.max_batch / copies);
  const std::vector<int64_t> zero(static_cast<size_t>(spatial), 0);
  for (size_t first_tile = 0; first_tile < tiles.size(); first_tile += static_cast<size_t>(tiles_per_pass)) {
    const size_t last = std::min(tiles.size(), first_tile + static_cast<size_t>(tiles_per_pass));
    std::vector<at::Tensor> batch;
    for (size_t t = first_tile; t < last; ++t) {
      const at::Tensor crop = image.index(region(tiles[t], zero));
      for (const auto& f : flips) batch.push_back(f.empty() ? crop : crop.flip(shifted(f, 1)));
    }
    at::Tensor y = forward(net, batch);
    for (size_t t = first_tile; t < last; ++t) {
      // nnU-Net's _internal_maybe_mirror_and_predict, then its accumulation, op for op: the mirrored
      // copies summed in order and divided by their count, times the gaussian (in the accumulators'
      // type, as nnU-Net's is fp16), added into the accumulators.
      at::Tensor sum;
      for (int64_t c = 0; c < copies; ++c) {
        at::Tensor yi = y[static_cast<int64_t>(t - first_tile) * copies + c];
        const auto& f = flips[static_cast<size_t>(c)];
        if (!f.empty()) yi = yi.flip(shifted(f, 1));
        sum = !sum.defined() ? yi : sum.add_(yi);
      }
      if (copies > 1) sum.div_(static_cast<double>(copies));
      sum.mul_(gauss_acc);
      auto r = region(tiles[t], origin);
      logits.index(r).add_(sum);
      r.erase(r.begin());
      weights.index(r).add_(gauss_acc);
      bar.tick();
      ++tally.done;
      if (o.on_tile && !o.on_tile(tally.done, tally.total)) throw Cancelled("prediction cancelled");
    }
  }
}

at::Tensor SlidingWindow::Impl::finished(const at::Tensor& logits, const at::Tensor& weights,
                                         const std::vector<int64_t>& origin) const {
  std::vector<at::indexing::TensorIndex> crop{at::indexing::Slice()};
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t lo = std::max<int64_t>(before[d], origin[d]) - origin[d];
    const int64_t hi = std::min<int64_t>(before[d] + original[d], origin[d] + weights.size(d)) - origin[d];
    crop.emplace_back(at::indexing::Slice(lo, std::max(lo, hi)));
  }
  // In the accumulators' type: nnU-Net divides its fp16 sums into an fp16 result.
  at::Tensor out =
      at::div(logits.index(crop), weights.index(std::vector<at::indexing::TensorIndex>(crop.begin() + 1, crop.end())))
          .to(at::kFloat);
  // The smallest and largest value are finite exactly when every element is (a NaN propagates), and
  // unlike isfinite() the reduction allocates nothing the size of the logits.
  if (out.numel() == 0) return out.to(at::kCPU);
  const auto [lo, hi] = at::aminmax(out);
  if (!std::isfinite(lo.item<float>()) || !std::isfinite(hi.item<float>()))
    throw NonFiniteLogits("sliding window: non-finite logits (fp16 accumulator overflow or a broken network)");
  return out.to(at::kCPU).contiguous();
}

std::vector<Tile> SlidingWindow::Impl::tiles(size_t first, size_t last) const {
  std::vector<std::vector<int64_t>> s = steps;
  auto& a = s[static_cast<size_t>(shard_axis)];
  a = std::vector<int64_t>(a.begin() + static_cast<std::ptrdiff_t>(first),
                           a.begin() + static_cast<std::ptrdiff_t>(last));
  // The shard axis outermost, the others in order: every tiling of the image (whole, slabs, shards)
  // visits a voxel's tiles in the same order.
  std::vector<size_t> order{static_cast<size_t>(shard_axis)};
  for (size_t d = 0; d < s.size(); ++d)
    if (d != static_cast<size_t>(shard_axis)) order.push_back(d);
  std::vector<Tile> out;
  std::vector<size_t> at(s.size(), 0);
  for (const auto& v : s)
    if (v.empty()) return out;
  while (true) {
    Tile t;
    t.start.resize(s.size());
    for (size_t d = 0; d < s.size(); ++d) t.start[d] = s[d][at[d]];
    out.push_back(std::move(t));
    size_t k = order.size();
    while (k > 0) {  // odometer over `order`, its last axis fastest
      const size_t d = order[k - 1];
      if (++at[d] < s[d].size()) break;
      at[d] = 0;
      --k;
    }
    if (k == 0) return out;
  }
}

double WindowShape::slab_voxels() const {
  double v = 1;
  for (size_t d = 0; d < padded.size(); ++d)
    v *= static_cast<double>(d == static_cast<size_t>(axis) ? patch[d] : padded[d]);
  return v;
}

double WindowShape::padded_voxels() const {
  double v = 1;
  for (int64_t n : padded) v *= static_cast<double>(n);
  return v;
}

WindowShape window_shape(const std::vector<int64_t>& image_size, const std::vector<int64_t>& patch_size,
                         double step_size, bool most_positions) {
  check_step_size(step_size, "sliding window: step_size");
  const auto spatial = image_size.size();
  MEDSEG_CHECK(spatial == 2 || spatial == 3, "sliding window: image must be (C, y, x) or (C, z, y, x)");
  MEDSEG_CHECK(patch_size.size() == spatial || (patch_size.size() == 2 && spatial == 3),
               "sliding window: patch dims do not fit the image");
  WindowShape w;
  w.patch = patch_size;
  if (patch_size.size() != spatial) w.patch.insert(w.patch.begin(), 1);  // a 2D network on a 3D image
  for (size_t d = 0; d < spatial; ++d) w.padded.push_back(std::max(image_size[d], w.patch[d]));
  std::vector<double> n;
  for (size_t d = 0; d < spatial; ++d) n.push_back(positions(w.padded[d], w.patch[d], step_size));
  for (size_t d = 1; d < spatial && most_positions; ++d) {
    const auto best = static_cast<size_t>(w.axis);
    if (n[d] > n[best] || (n[d] == n[best] && w.padded[d] > w.padded[best])) w.axis = static_cast<int64_t>(d);
  }
  return w;
}

SlidingWindow::SlidingWindow(const at::Tensor& image_in, int64_t num_classes, const SlidingWindowOptions& o)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.o = o;
  m.classes = num_classes;
  m.spatial = image_in.dim() - 1;
  MEDSEG_CHECK(m.spatial == 2 || m.spatial == 3, "sliding window: image must be (C, y, x) or (C, z, y, x)");
  m.original.assign(image_in.sizes().begin() + 1, image_in.sizes().end());
  const int64_t pd = static_cast<int64_t>(o.patch_size.size());
  const WindowShape shape = window_shape(m.original, o.patch_size, o.step_size, o.split_most_positions);
  m.slice_mode = pd == 2 && m.spatial == 3;
  m.patch = shape.patch;
  for (auto a : o.mirror_axes) MEDSEG_CHECK(a >= 0 && a < pd, "sliding window: mirror axis out of range");
  m.mirror_axes = m.slice_mode ? shifted(o.mirror_axes, 1) : o.mirror_axes;

  // Pad (centred, zeros) where the image is smaller than the patch.
  std::vector<int64_t> pad;  // torch order: last axis first, (before, after)
  m.before.assign(static_cast<size_t>(m.spatial), 0);
  for (int64_t d = m.spatial - 1; d >= 0; --d) {
    const int64_t diff = shape.padded[d] - m.original[d];
    m.before[d] = diff / 2;
    pad.push_back(diff / 2);
    pad.push_back(diff - diff / 2);
  }
  m.image = image_in.to(m.accumulator_device(), at::kFloat);
  if (std::any_of(pad.begin(), pad.end(), [](int64_t v) { return v > 0; }))
    m.image = at::constant_pad_nd(m.image, pad, 0.0);
  m.size = shape.padded;
  check_tiles_fit(m.size, m.patch, o.step_size);
  m.steps = compute_steps(m.size, m.patch, o.step_size);
  m.shard_axis = shape.axis;
  // The gaussian of the network's patch (a 2D one for slices), in the accumulators' type.
  m.gauss_acc = (o.use_gaussian ? gaussian_importance_map(o.patch_size, 1.0 / 8.0, 10.0, m.accumulator_type())
                                : at::ones(o.patch_size, m.accumulator_type()))
                    .reshape(m.patch)
                    .to(m.accumulator_device());
}

SlidingWindow::~SlidingWindow() = default;

namespace {
// Positions [first, last) of `n` that shard `index` of `count` takes.
std::pair<size_t, size_t> shard_positions(size_t n, int index, int count) {
  MEDSEG_CHECK(count >= 1 && index >= 0 && index < count, "sliding window: shard index out of range");
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
  auto [logits, weights] = m.zeros(extent);
  const auto start = std::chrono::steady_clock::now();
  ProgressBar bar("sliding window", static_cast<int64_t>(tiles.size()), m.o.progress);
  Impl::Tally tally{0, static_cast<int64_t>(tiles.size())};
  m.add_tiles(net, tiles, origin, logits, weights, bar, tally);
  bar.finish();
  m.log_work(tally.done, start);
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
  return m.finished(logits, weights, std::vector<int64_t>(static_cast<size_t>(m.spatial), 0));
}

int64_t SlidingWindow::axis() const { return impl_->shard_axis; }

void SlidingWindow::stream(const NetworkFn& net, const SlabSink& sink) const {
  const Impl& m = *impl_;
  const auto a = static_cast<size_t>(m.shard_axis);
  const std::vector<int64_t>& pos = m.steps[a];
  const int64_t thick = m.patch[a];
  std::vector<int64_t> origin(static_cast<size_t>(m.spatial), 0), extent = m.size;
  extent[a] = thick;
  auto [logits, weights] = m.zeros(extent);
  const auto total = static_cast<int64_t>(tile_count(m.size, m.patch, m.o.step_size));
  const auto start = std::chrono::steady_clock::now();
  ProgressBar bar("sliding window", total, m.o.progress);
  Impl::Tally tally{0, total};
  for (size_t i = 0; i < pos.size(); ++i) {
    origin[a] = pos[i];  // the accumulators hold [pos[i], pos[i] + thick) along the axis
    m.add_tiles(net, m.tiles(i, i + 1), origin, logits, weights, bar, tally);
    // No later row reaches below pos[i + 1]: that part is final.
    const int64_t done = (i + 1 < pos.size() ? pos[i + 1] : m.size[a]) - pos[i];
    // Handed over in chunks of a 32nd of the accumulator, so the finished logits (a division's
    // result) stay small beside it.
    const int64_t chunk = std::max<int64_t>(1, thick / 32);
    for (int64_t from = 0; from < done; from += chunk) {
      const int64_t len = std::min(chunk, done - from);
      std::vector<int64_t> at = origin;
      at[a] += from;
      const at::Tensor part =
          m.finished(logits.narrow(m.shard_axis + 1, from, len), weights.narrow(m.shard_axis, from, len), at);
      if (part.size(m.shard_axis + 1) > 0) sink(std::max<int64_t>(0, at[a] - m.before[a]), part);
    }
    if (i + 1 == pos.size()) break;
    // Move the unfinished rest to the front, one class at a time (copy_ refuses overlapping views).
    const int64_t keep = thick - done;
    for (int64_t k = 0; k <= m.classes; ++k) {
      at::Tensor acc = k < m.classes ? logits[k] : weights;
      if (keep > 0) acc.narrow(m.shard_axis, 0, keep).copy_(acc.narrow(m.shard_axis, done, keep).clone());
      acc.narrow(m.shard_axis, keep, thick - keep).zero_();
    }
  }
  bar.finish();
  m.log_work(tally.done, start);
}

at::Tensor predict_sliding_window(const NetworkFn& net, const at::Tensor& image, int64_t num_classes,
                                  const SlidingWindowOptions& o) {
  try {
    const SlidingWindow window(image, num_classes, o);
    const auto [logits, weights] = window.accumulate(net, 0, 1);
    return window.finish(logits, weights);
  } catch (const NonFiniteLogits& e) {
    if (!o.half_accumulators) throw;
    // Where nnU-Net stops ("Encountered inf in predicted array"), predict once more in fp32.
    spdlog::warn("{}; predicting again with float32 accumulators", one_line(e.what()));
    SlidingWindowOptions f = o;
    f.half_accumulators = false;
    return predict_sliding_window(net, image, num_classes, f);
  }
}

}  // namespace medseg::inference
