#include "inference/slab_export.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "core/numeric.h"
#include "core/parallel.h"
#include "core/strings.h"
#include "preprocessing/resampling.h"

namespace medseg::inference {
namespace {

// Where each output index of one axis reads, with scipy.ndimage.zoom's arithmetic (skimage's resize,
// which nnU-Net's resampling calls: grid_mode, mode 'nearest'), checked value for value against scipy
// 1.17: the coordinate c = ((o + 0.5) * zoom) - 0.5 with zoom = in / out; order 1 reads floor(c) with
// weight 1 - t and floor(c) + 1 with 1 - (1 - t) (t = c - floor(c)), indices outside the axis moved to
// its nearest end (so both may read the same voxel); order 0 (map_coordinates) reads floor(c + 0.5) of
// c clamped to the axis, with weight 1. An unchanged axis reads o with weight 1.
struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<double> w_lo, w_hi;  // w_hi == 0: lo alone
};

Taps make_taps(int64_t in, int64_t out, int order) {
  Taps t;
  const double zoom = static_cast<double>(in) / static_cast<double>(out);
  auto inside = [in](double i) { return static_cast<int64_t>(std::clamp(i, 0.0, static_cast<double>(in - 1))); };
  for (int64_t o = 0; o < out; ++o) {
    int64_t lo = o, hi = o;
    double w_lo = 1.0, w_hi = 0.0;
    if (in != out) {
      const double c = (static_cast<double>(o) + 0.5) * zoom - 0.5;
      if (order == 0) {
        lo = hi = inside(std::floor(std::clamp(c, 0.0, static_cast<double>(in - 1)) + 0.5));
      } else {
        const double f = std::floor(c);
        lo = inside(f);
        hi = inside(f + 1);
        w_lo = 1.0 - (c - f);
        w_hi = 1.0 - w_lo;
      }
    }
    t.lo.push_back(lo);
    t.hi.push_back(hi);
    t.w_lo.push_back(w_lo);
    t.w_hi.push_back(w_hi);
  }
  return t;
}

}  // namespace

bool SlabExport::supported(const ExportOptions& opts) {
  // nnU-Net's torch resampling is not written out slab by slab (its float arithmetic is torch's own).
  if (opts.resample.kernel != preprocessing::ResampleKernel::Skimage) return false;
  const auto& o = opts.resample.orders;
  return o.order >= 0 && o.order <= 1 && o.order_z >= 0 && o.order_z <= 1;
}

struct SlabExport::Impl {
  preprocessing::CaseProperties props;
  LabelMapping labels;
  int threads = 1;
  int64_t K = 0;
  int64_t a = 0, b = 1, c = 2;  // the slab axis, then the in-plane axes in order
  Shape3 in{}, out{};
  Taps ta, tb, tc;
  std::array<const Taps*, 3> ts{};               // ta, tb, tc
  std::vector<bool> needed;                      // input slices along `a` some output reads
  std::map<int64_t, std::vector<float>> planes;  // input index along a -> its K input planes (in_b x in_c)
  int64_t next_in = 0, next_out = 0;
  std::vector<uint16_t> seg;  // cropped, transposed grid
  bool keep = false;
  std::vector<float> all;  // K x cropped, with keep

  int64_t plane_size() const { return out[b] * out[c]; }
  int64_t index(int64_t ia, int64_t ib, int64_t ic) const {
    int64_t co[3];
    co[a] = ia, co[b] = ib, co[c] = ic;
    return (co[0] * out[1] + co[1]) * out[2] + co[2];
  }
  bool half = false;  // round the resampled logits to fp16 values (ExportOptions::half_logits)
  std::vector<float> input_planes(const at::Tensor& slab, int64_t local) const;
  void produce(int64_t o);
  std::array<const float*, 2> corner_planes(int64_t k, int64_t o) const;
  void zoomed_rows(const std::array<const float*, 2>& at_a, int64_t o, int64_t ib0, int64_t ib1, float* dst) const;
  double zoomed_value(const std::array<const float*, 2>& at_a, const int64_t (&oo)[3]) const;
  bool corner(int d, int p, int64_t o, int64_t& i, double& w) const;
  void pick_labels(int64_t o, const std::vector<std::vector<float>>& values);
};

SlabExport::SlabExport(const preprocessing::CaseProperties& p, const LabelMapping& labels, const ExportOptions& opts,
                       int64_t axis, bool keep_probabilities)
    : impl_(std::make_unique<Impl>()) {
  MEDSEG_CHECK(supported(opts), "export: slab-wise resampling takes orders 0 and 1 only");
  MEDSEG_CHECK(axis >= 0 && axis <= 2, "export: slab axis out of range");
  Impl& m = *impl_;
  m.props = p;
  m.labels = labels;
  m.threads = std::max(1, opts.threads);
  m.K = static_cast<int64_t>(labels.values.size());
  m.a = axis;
  m.b = axis == 0 ? 1 : 0;
  m.c = axis == 2 ? 1 : 2;
  m.in = p.shape_after_resampling;
  m.out = p.shape_after_cropping_and_before_resampling;
  const auto sep =
      preprocessing::decide_separate_z(opts.resample, p.spacing_after_resampling, p.spacing_before_resampling);
  auto order = [&](int64_t d) {
    return sep.enabled && sep.axis == d ? opts.resample.orders.order_z : opts.resample.orders.order;
  };
  m.ta = make_taps(m.in[m.a], m.out[m.a], order(m.a));
  m.tb = make_taps(m.in[m.b], m.out[m.b], order(m.b));
  m.tc = make_taps(m.in[m.c], m.out[m.c], order(m.c));
  m.needed.assign(static_cast<size_t>(m.in[m.a]), false);
  for (int64_t o = 0; o < m.out[m.a]; ++o) m.needed[m.ta.lo[o]] = m.needed[m.ta.hi[o]] = true;
  m.ts[static_cast<size_t>(m.a)] = &m.ta;
  m.ts[static_cast<size_t>(m.b)] = &m.tb;
  m.ts[static_cast<size_t>(m.c)] = &m.tc;
  m.seg.assign(static_cast<size_t>(m.out[0] * m.out[1] * m.out[2]), 0);
  m.keep = keep_probabilities;
  m.half = opts.half_logits;
  if (m.keep) m.all.assign(static_cast<size_t>(m.K) * m.seg.size(), 0.0f);
}

SlabExport::~SlabExport() = default;

// The K input planes of slice `local` (along a) of a slab, each in_b x in_c, in order.
std::vector<float> SlabExport::Impl::input_planes(const at::Tensor& slab, int64_t local) const {
  const float* src = slab.data_ptr<float>();
  const int64_t s1 = slab.size(2), s2 = slab.size(3);
  const int64_t class_stride = slab.size(1) * s1 * s2;
  const int64_t nb = in[b], nc = in[c];
  std::vector<float> res(static_cast<size_t>(K * nb * nc));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t j = 0; j < nc; ++j) {
        int64_t co[3];
        co[a] = local, co[b] = i, co[c] = j;
        res[static_cast<size_t>((k * nb + i) * nc + j)] = src[k * class_stride + (co[0] * s1 + co[1]) * s2 + co[2]];
      }
  return res;
}

// Output slice `o` along `a`: every voxel as scipy's zoom makes it, the sum over its corners (C order
// of the array's axes) of value * w_axis0 * w_axis1 * w_axis2, in double; then rounded to the logits'
// type, argmax (first maximum wins, as numpy's) or, for regions, each region painted where its logit is
// > 0 (sigmoid > 0.5).
// The threads share the slice in blocks of rows of one class each (not a class each: 3 classes on 2 threads
// would leave one idle a third of the time); every voxel is computed alone, so the split changes no value.
void SlabExport::Impl::produce(int64_t o) {
  constexpr int64_t kRows = 8;
  const int64_t blocks = (out[b] + kRows - 1) / kRows;
  std::vector<std::vector<float>> values(static_cast<size_t>(K), std::vector<float>(static_cast<size_t>(plane_size())));
  std::vector<std::array<const float*, 2>> corners(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) corners[static_cast<size_t>(k)] = corner_planes(k, o);
  parallel_for(K * blocks, threads, [&](int64_t t) {
    const int64_t k = t / blocks, ib0 = (t % blocks) * kRows, ib1 = std::min(out[b], ib0 + kRows);
    zoomed_rows(corners[static_cast<size_t>(k)], o, ib0, ib1, values[static_cast<size_t>(k)].data() + ib0 * out[c]);
  });
  pick_labels(o, values);
}

// Corner p (0 low, 1 high) of output index o along axis d: its input index and weight. False for a high corner
// without weight (an output voxel on an input voxel), which is skipped as scipy skips it.
bool SlabExport::Impl::corner(int d, int p, int64_t o, int64_t& i, double& w) const {
  w = p ? ts[d]->w_hi[o] : ts[d]->w_lo[o];
  i = p ? ts[d]->hi[o] : ts[d]->lo[o];
  return !(p && w == 0.0);
}

// A class's value at output voxel `oo`: the weighted sum over its (up to 8) corners, in C order of the axes, in
// the class's input planes at the low and high corner along a (`at_a`: corner_planes, found once per output slice).
double SlabExport::Impl::zoomed_value(const std::array<const float*, 2>& at_a, const int64_t (&oo)[3]) const {
  double sum = 0.0, w0 = 0, w1 = 0, w2 = 0;
  int64_t ii[3];
  for (int p0 = 0; p0 < 2; ++p0) {
    if (!corner(0, p0, oo[0], ii[0], w0)) continue;
    for (int p1 = 0; p1 < 2; ++p1) {
      if (!corner(1, p1, oo[1], ii[1], w1)) continue;
      for (int p2 = 0; p2 < 2; ++p2) {
        if (!corner(2, p2, oo[2], ii[2], w2)) continue;
        const int pa = a == 0 ? p0 : (a == 1 ? p1 : p2);
        const float d = at_a[static_cast<size_t>(pa)][ii[b] * in[c] + ii[c]];
        sum += static_cast<double>(d) * w0 * w1 * w2;
      }
    }
  }
  return sum;
}

// Class k's input planes at output slice o's low and high corner along a (nullptr for a skipped high corner).
std::array<const float*, 2> SlabExport::Impl::corner_planes(int64_t k, int64_t o) const {
  std::array<const float*, 2> res{nullptr, nullptr};
  for (int p = 0; p < 2; ++p) {
    int64_t i = 0;
    double w = 0;
    if (corner(static_cast<int>(a), p, o, i, w)) res[static_cast<size_t>(p)] = planes.at(i).data() + k * in[b] * in[c];
  }
  return res;
}

// Rows [ib0, ib1) of a class's logits on output slice o, in the logits' type, into dst.
void SlabExport::Impl::zoomed_rows(const std::array<const float*, 2>& at_a, int64_t o, int64_t ib0, int64_t ib1,
                                   float* dst) const {
  for (int64_t ib = ib0; ib < ib1; ++ib)
    for (int64_t ic = 0; ic < out[c]; ++ic) {
      int64_t oo[3];
      oo[a] = o, oo[b] = ib, oo[c] = ic;
      const double sum = zoomed_value(at_a, oo);
      *dst++ = half ? logit_as_half(sum) : static_cast<float>(sum);
    }
}

// The labels of slice o from every class's logits (and the logits kept when probabilities are saved).
void SlabExport::Impl::pick_labels(int64_t o, const std::vector<std::vector<float>>& values) {
  const int64_t n = plane_size();
  std::vector<float> best(static_cast<size_t>(n), -std::numeric_limits<float>::infinity());
  std::vector<uint16_t> value(static_cast<size_t>(n), 0);
  const int64_t total = static_cast<int64_t>(seg.size());
  for (int64_t k = 0; k < K; ++k) {
    const std::vector<float>& v = values[static_cast<size_t>(k)];
    const auto label = static_cast<uint16_t>(labels.values[static_cast<size_t>(k)]);
    for (int64_t i = 0; i < n; ++i) {
      const float x = v[static_cast<size_t>(i)];
      if (labels.regions ? x > 0.0f : x > best[static_cast<size_t>(i)]) {
        best[static_cast<size_t>(i)] = x;
        value[static_cast<size_t>(i)] = label;
      }
    }
    if (keep)
      for (int64_t ib = 0; ib < out[b]; ++ib)
        for (int64_t ic = 0; ic < out[c]; ++ic)
          all[static_cast<size_t>(k * total + index(o, ib, ic))] = v[static_cast<size_t>(ib * out[c] + ic)];
  }
  for (int64_t ib = 0; ib < out[b]; ++ib)
    for (int64_t ic = 0; ic < out[c]; ++ic)
      seg[static_cast<size_t>(index(o, ib, ic))] = value[static_cast<size_t>(ib * out[c] + ic)];
}

void SlabExport::add(int64_t begin, const at::Tensor& logits) {
  Impl& m = *impl_;
  MEDSEG_CHECK(begin == m.next_in, "export: slab at ", begin, ", expected ", m.next_in);
  MEDSEG_CHECK(logits.dim() == 4 && logits.size(0) == m.K && logits.is_contiguous() &&
                   logits.scalar_type() == at::kFloat && logits.device().is_cpu(),
               "export: a slab must be (K, z, y, x) contiguous float32 on the CPU with K = ", m.K);
  const int64_t len = logits.size(m.a + 1);
  for (int64_t d = 0; d < 3; ++d)
    MEDSEG_CHECK(d != m.a ? logits.size(d + 1) == m.in[d] : len >= 1 && begin + len <= m.in[d],
                 "export: slab of shape ", shape_str({logits.size(1), logits.size(2), logits.size(3)}), " at ", begin,
                 " does not fit the preprocessed shape ", shape_str(m.in));
  // Slice by slice: each output as soon as its input slices are there, and input slices no later
  // output reads dropped at once, so that only about two are kept.
  for (int64_t j = 0; j < len; ++j) {
    if (m.needed[static_cast<size_t>(begin + j)]) m.planes[begin + j] = m.input_planes(logits, j);
    m.next_in = begin + j + 1;
    while (m.next_out < m.out[m.a] && m.ta.hi[m.next_out] < m.next_in) m.produce(m.next_out++);
    const int64_t keep_from = m.next_out < m.out[m.a] ? m.ta.lo[m.next_out] : m.next_in;
    m.planes.erase(m.planes.begin(), m.planes.lower_bound(keep_from));
  }
}

Volume SlabExport::finish(std::vector<float>* probabilities) {
  Impl& m = *impl_;
  MEDSEG_CHECK(m.next_in == m.in[m.a] && m.next_out == m.out[m.a], "export: slabs end at ", m.next_in, " of ",
               m.in[m.a]);
  MEDSEG_CHECK(!probabilities || m.keep, "export: probabilities were not kept");
  return segmentation_to_original(m.seg, probabilities ? &m.all : nullptr, m.props, m.labels, probabilities);
}

}  // namespace medseg::inference
