#include "data/case_source.h"

#include <cmath>
#include <numeric>

#include "core/error.h"
#include "data/crop.h"
#include "data/rng.h"

namespace medseg::data {

const std::vector<int>& CaseSource::previous_stage_labels() const {
  static const std::vector<int> none;
  return none;
}

void CaseSource::read_previous_stage(int64_t i, const Box&, int16_t*, int16_t) const {
  throw Error("case '" + id(i) + "': this data source has no previous-stage segmentation");
}

void InMemoryCaseSource::add(InMemoryCase c) {
  const int64_t n = c.shape[0] * c.shape[1] * c.shape[2];
  MEDSEG_CHECK(c.channels >= 1 && static_cast<int64_t>(c.data.size()) == n * c.channels, "case '", c.id,
               "': data holds ", c.data.size(), " values, expected ", n * c.channels);
  MEDSEG_CHECK(static_cast<int64_t>(c.seg.size()) == n, "case '", c.id, "': segmentation holds ", c.seg.size(),
               " voxels, expected ", n);
  MEDSEG_CHECK(cases_.empty() || c.channels == cases_[0].channels, "case '", c.id, "' has ", c.channels,
               " channels, earlier cases have ", cases_[0].channels);
  cases_.push_back(std::move(c));
}

const InMemoryCase& InMemoryCaseSource::at(int64_t i) const {
  MEDSEG_CHECK(i >= 0 && i < size(), "case index ", i, " out of range");
  return cases_[static_cast<size_t>(i)];
}

void InMemoryCaseSource::read_data(int64_t i, const Box& box, float* out, float pad) const {
  const auto& c = at(i);
  copy_box(c.data.data(), c.channels, c.shape, box, out, pad);
}

void InMemoryCaseSource::read_seg(int64_t i, const Box& box, int16_t* out, int16_t pad) const {
  const auto& c = at(i);
  copy_box(c.seg.data(), 1, c.shape, box, out, pad);
}

ClassLocations class_locations_from_seg(const int8_t* seg, const Shape3& shape, const std::vector<int>& labels,
                                        int64_t max_per_class, double min_fraction, uint64_t seed) {
  ClassLocations out;
  Rng rng(seed);
  const int64_t n = shape[0] * shape[1] * shape[2];
  for (int label : labels) {
    std::vector<int64_t> idx;
    for (int64_t v = 0; v < n; ++v)
      if (seg[v] == label) idx.push_back(v);
    const auto count = static_cast<int64_t>(idx.size());
    int64_t take = std::min(max_per_class, count);
    take = std::max(take, static_cast<int64_t>(std::ceil(static_cast<double>(count) * min_fraction)));
    take = std::min(take, count);
    for (int64_t k = 0; k < take; ++k) std::swap(idx[k], idx[rng.randint(k, count - 1)]);  // partial shuffle
    auto& locs = out[label];
    locs.reserve(static_cast<size_t>(take));
    for (int64_t k = 0; k < take; ++k) {
      const int64_t v = idx[k];
      locs.push_back({v / (shape[1] * shape[2]), (v / shape[2]) % shape[1], v % shape[2]});
    }
  }
  return out;
}

}  // namespace medseg::data
