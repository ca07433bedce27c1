#include "inference/slab_export.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "core/parallel.h"
#include "core/strings.h"
#include "preprocessing/resampling.h"

namespace medseg::inference {
namespace {

// Where each output index of one axis reads: value = (1 - w) * in[lo] + w * in[hi].
struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<float> w;
};

Taps make_taps(int64_t in, int64_t out, int order) {
  Taps t;
  for (int64_t o = 0; o < out; ++o) {
    int64_t lo = o, hi = o;
    float w = 0.0f;
    if (in != out) {
      const double c = (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
      if (order == 0) {
        lo = hi = std::clamp<int64_t>(static_cast<int64_t>(std::floor(c + 0.5)), 0, in - 1);
      } else {
        const double f = std::floor(c);
        lo = std::clamp<int64_t>(static_cast<int64_t>(f), 0, in - 1);
        hi = std::clamp<int64_t>(static_cast<int64_t>(f) + 1, 0, in - 1);
        w = lo == hi ? 0.0f : static_cast<float>(c - f);
      }
    }
    t.lo.push_back(lo);
    t.hi.push_back(hi);
    t.w.push_back(w);
  }
  return t;
}

inline float lerp(float a, float b, float w) { return w == 0.0f ? a : (1.0f - w) * a + w * b; }

}  // namespace

bool SlabExport::supported(const ExportOptions& opts) {
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
  std::vector<bool> needed;                      // input slices along `a` some output reads
  std::map<int64_t, std::vector<float>> planes;  // input index -> K in-plane resampled planes (out_b x out_c)
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
  std::vector<float> inplane(const at::Tensor& slab, int64_t local) const;
  void produce(int64_t o);
};

SlabExport::SlabExport(const preprocessing::CaseProperties& p, const LabelMapping& labels, const ExportOptions& opts,
                       int64_t axis, bool keep_probabilities)
    : impl_(std::make_unique<Impl>()) {
  if (!supported(opts)) throw Error("export: slab-wise resampling takes orders 0 and 1 only");
  if (axis < 0 || axis > 2) throw Error("export: slab axis out of range");
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
  const auto sep = preprocessing::decide_separate_z(opts.resample.force_separate_z, p.spacing_after_resampling,
                                                    p.spacing_before_resampling);
  auto order = [&](int64_t d) {
    return sep.enabled && sep.axis == d ? opts.resample.orders.order_z : opts.resample.orders.order;
  };
  m.ta = make_taps(m.in[m.a], m.out[m.a], order(m.a));
  m.tb = make_taps(m.in[m.b], m.out[m.b], order(m.b));
  m.tc = make_taps(m.in[m.c], m.out[m.c], order(m.c));
  m.needed.assign(static_cast<size_t>(m.in[m.a]), false);
  for (int64_t o = 0; o < m.out[m.a]; ++o) m.needed[m.ta.lo[o]] = m.needed[m.ta.hi[o]] = true;
  m.seg.assign(static_cast<size_t>(m.out[0] * m.out[1] * m.out[2]), 0);
  m.keep = keep_probabilities;
  if (m.keep) m.all.assign(static_cast<size_t>(m.K) * m.seg.size(), 0.0f);
}

SlabExport::~SlabExport() = default;

namespace {

// Interpolates a plane (rows x cols) along its rows (t over `rows`) or its columns (t over `cols`).
std::vector<float> along_rows(const std::vector<float>& in, int64_t cols, const Taps& t) {
  const auto rows_out = static_cast<int64_t>(t.lo.size());
  std::vector<float> out(static_cast<size_t>(rows_out * cols));
  for (int64_t o = 0; o < rows_out; ++o) {
    const float* lo = &in[static_cast<size_t>(t.lo[o] * cols)];
    const float* hi = &in[static_cast<size_t>(t.hi[o] * cols)];
    for (int64_t j = 0; j < cols; ++j) out[static_cast<size_t>(o * cols + j)] = lerp(lo[j], hi[j], t.w[o]);
  }
  return out;
}

std::vector<float> along_cols(const std::vector<float>& in, int64_t rows, int64_t cols, const Taps& t) {
  const auto cols_out = static_cast<int64_t>(t.lo.size());
  std::vector<float> out(static_cast<size_t>(rows * cols_out));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t o = 0; o < cols_out; ++o)
      out[static_cast<size_t>(i * cols_out + o)] =
          lerp(in[static_cast<size_t>(i * cols + t.lo[o])], in[static_cast<size_t>(i * cols + t.hi[o])], t.w[o]);
  return out;
}

}  // namespace

// The axes are always interpolated in the order 0, 1, 2, whatever the slab axis, so that slabs
// along any axis give the same numbers: the passes along in-plane axes before `a` are done here,
// on each input slice, and those after `a` in produce(), after the pass along `a`.
std::vector<float> SlabExport::Impl::inplane(const at::Tensor& slab, int64_t local) const {
  const float* src = slab.data_ptr<float>();
  const int64_t s1 = slab.size(2), s2 = slab.size(3);
  const int64_t class_stride = slab.size(1) * s1 * s2;
  const int64_t nb = in[b], nc = in[c];
  const int64_t rows = a < b ? nb : out[b], cols = a < c ? nc : out[c];
  std::vector<float> res(static_cast<size_t>(K * rows * cols));
  parallel_for(K, threads, [&](int64_t k) {
    std::vector<float> plane(static_cast<size_t>(nb * nc));  // the slice (nb x nc) of class k
    const float* cls = src + k * class_stride;
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t j = 0; j < nc; ++j) {
        int64_t co[3];
        co[a] = local, co[b] = i, co[c] = j;
        plane[static_cast<size_t>(i * nc + j)] = cls[(co[0] * s1 + co[1]) * s2 + co[2]];
      }
    if (b < a) plane = along_rows(plane, nc, tb);
    if (c < a) plane = along_cols(plane, out[b], nc, tc);
    std::copy(plane.begin(), plane.end(), res.begin() + k * rows * cols);
  });
  return res;
}

// Output slice `o` along `a`: interpolated between its two input slices, the passes after `a`,
// then argmax (first maximum wins, as numpy's) or, for regions, each region painted where its
// logit is > 0 (sigmoid > 0.5).
void SlabExport::Impl::produce(int64_t o) {
  const int64_t n = plane_size();
  const int64_t rows = a < b ? in[b] : out[b], cols = a < c ? in[c] : out[c], stored = rows * cols;
  const std::vector<float>& A = planes.at(ta.lo[o]);
  const std::vector<float>& B = planes.at(ta.hi[o]);
  const float w = ta.w[o];
  std::vector<std::vector<float>> values(static_cast<size_t>(K));
  parallel_for(K, threads, [&](int64_t k) {
    std::vector<float> v(static_cast<size_t>(stored));
    const float* pa = &A[static_cast<size_t>(k * stored)];
    const float* pb = &B[static_cast<size_t>(k * stored)];
    for (int64_t i = 0; i < stored; ++i) v[static_cast<size_t>(i)] = lerp(pa[i], pb[i], w);
    if (b > a) v = along_rows(v, cols, tb);
    if (c > a) v = along_cols(v, out[b], cols, tc);
    values[static_cast<size_t>(k)] = std::move(v);
  });
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
    if (m.needed[static_cast<size_t>(begin + j)]) m.planes[begin + j] = m.inplane(logits, j);
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
  if (probabilities && !m.keep) throw Error("export: probabilities were not kept");
  return segmentation_to_original(m.seg, probabilities ? &m.all : nullptr, m.props, m.labels, probabilities);
}

}  // namespace medseg::inference
