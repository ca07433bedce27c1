#pragma once
// CaseSource over the preprocessed case store (lib/preprocessing/case_store.h): memory-mapped
// CASE.npy / CASE_seg.npy with class locations from CASE.json.
#include <string>
#include <vector>

#include "data/case_source.h"
#include "preprocessing/case_store.h"

namespace medseg::data {

class PreprocessedCaseSource : public CaseSource {
 public:
  // Opens the cases `ids` of `folder` (every complete case when `ids` is empty). Throws FileError
  // naming the file for a missing or damaged case, Error when channel counts differ.
  explicit PreprocessedCaseSource(const std::string& folder, const std::vector<std::string>& ids = {});

  int64_t size() const override { return static_cast<int64_t>(cases_.size()); }
  std::string id(int64_t i) const override { return cases_.at(static_cast<size_t>(i)).id(); }
  int64_t channels() const override { return cases_.empty() ? 0 : cases_[0].num_channels(); }
  Shape3 shape(int64_t i) const override { return cases_.at(static_cast<size_t>(i)).shape(); }
  const ClassLocations& class_locations(int64_t i) const override { return locations_.at(static_cast<size_t>(i)); }
  void read_data(int64_t i, const Box& box, float* out, float pad) const override;
  void read_seg(int64_t i, const Box& box, int16_t* out, int16_t pad) const override;

 private:
  std::vector<preprocessing::PreprocessedCase> cases_;
  std::vector<ClassLocations> locations_;
};

// Sampling-class key of the properties JSON ("2", or "1,2,3" for a region) -> the int key the
// sampler reports: the label itself, kAnnotatedClass for the annotated voxels of a dataset with an
// ignore label (the one key holding background 0), or 1000 + the class's position among the case's
// classes as read (key order of the JSON object) for a region.
int sampling_class_id(const std::string& key, size_t position);

}  // namespace medseg::data
