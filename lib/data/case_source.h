#pragma once
// What the sampler needs from a preprocessed dataset, independent of how cases are stored:
// shapes, channel count, nnU-Net's stored foreground locations, and copies of arbitrary boxes
// (boxes may reach outside the case; the outside is filled with a pad value).
// Implementations must allow concurrent const calls from the loader's worker threads.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/grid.h"

namespace medseg::data {

// Per foreground label, voxel positions (z, y, x) known to carry it (nnU-Net's
// properties['class_locations'] without the leading channel index). Ordered by label.
using ClassLocations = std::map<int, std::vector<Shape3>>;
// The ClassLocations key of a dataset with an ignore label for the annotated voxels (every label
// but "ignore", background included): nnU-Net centres the patches it does not force on foreground
// on one of them, so partially annotated cases train on what was annotated.
inline constexpr int kAnnotatedClass = -2;

class CaseSource {
 public:
  virtual ~CaseSource() = default;
  virtual int64_t size() const = 0;
  virtual std::string id(int64_t i) const = 0;
  virtual int64_t channels() const = 0;  // same for every case
  virtual Shape3 shape(int64_t i) const = 0;
  virtual const ClassLocations& class_locations(int64_t i) const = 0;
  // Image box as float32 (channels, box.shape()) into `out` (contiguous); outside the case: `pad`.
  virtual void read_data(int64_t i, const Box& box, float* out, float pad) const = 0;
  // Segmentation box (1, box.shape()) as int16 into `out`; outside the case: `pad`.
  virtual void read_seg(int64_t i, const Box& box, int16_t* out, int16_t pad) const = 0;
  // Cascade stages (previous_stage_source.h): the foreground labels whose one-hot channels the
  // previous stage's segmentation adds to the image; empty for every other source.
  virtual const std::vector<int>& previous_stage_labels() const;
  // The previous stage's segmentation box (1, box.shape()) as int16; outside the case: `pad`.
  // Throws Error for a source without one.
  virtual void read_previous_stage(int64_t i, const Box& box, int16_t* out, int16_t pad) const;
};

// A case held in memory (tests, benchmarks, small datasets).
struct InMemoryCase {
  std::string id;
  Shape3 shape{0, 0, 0};
  int64_t channels = 1;
  std::vector<float> data;  // (channels, z, y, x)
  std::vector<int8_t> seg;  // (z, y, x); -1 outside the nonzero mask, like nnU-Net's preprocessed seg
  ClassLocations locations;
};

class InMemoryCaseSource : public CaseSource {
 public:
  // Throws Error when sizes disagree or the channel count differs from earlier cases.
  void add(InMemoryCase c);
  int64_t size() const override { return static_cast<int64_t>(cases_.size()); }
  std::string id(int64_t i) const override { return at(i).id; }
  int64_t channels() const override { return cases_.empty() ? 0 : cases_[0].channels; }
  Shape3 shape(int64_t i) const override { return at(i).shape; }
  const ClassLocations& class_locations(int64_t i) const override { return at(i).locations; }
  void read_data(int64_t i, const Box& box, float* out, float pad) const override;
  void read_seg(int64_t i, const Box& box, int16_t* out, int16_t pad) const override;
  const InMemoryCase& at(int64_t i) const;

 private:
  std::vector<InMemoryCase> cases_;
};

// nnU-Net's foreground location sampling (preprocessing, _sample_foreground_locations): per label,
// min(max_per_class, n) voxels but at least ceil(n * min_fraction), drawn without replacement with a
// fixed seed. Labels with no voxel get an empty list.
ClassLocations class_locations_from_seg(const int8_t* seg, const Shape3& shape, const std::vector<int>& labels,
                                        int64_t max_per_class = 10000, double min_fraction = 0.01,
                                        uint64_t seed = 1234);

}  // namespace medseg::data
