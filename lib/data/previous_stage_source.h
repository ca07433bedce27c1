#pragma once
// The data source of a cascade stage (3d_cascade_fullres): the cases of another source, each with
// the previous stage's segmentation of it on the same grid (predicted_next_stage/<configuration>/
// CASE.npy, written by the previous stage's final validation; docs/cascade.md). The batch builder
// appends its one-hot channels to the image (data/augment/cascade.h).
#include <memory>
#include <string>
#include <vector>

#include "data/case_source.h"
#include "preprocessing/case_store.h"

namespace medseg::data {

class PreviousStageSource : public CaseSource {
 public:
  // Opens `folder`/ID.npy for every case of `base`. Throws FileError naming the file when one is
  // missing or damaged, or when its shape differs from the case's (`hint` says how to make them).
  PreviousStageSource(std::shared_ptr<const CaseSource> base, const std::string& folder, std::vector<int> labels,
                      const std::string& hint);

  int64_t size() const override { return base_->size(); }
  std::string id(int64_t i) const override { return base_->id(i); }
  int64_t channels() const override { return base_->channels(); }
  Shape3 shape(int64_t i) const override { return base_->shape(i); }
  const ClassLocations& class_locations(int64_t i) const override { return base_->class_locations(i); }
  void read_data(int64_t i, const Box& box, float* out, float pad) const override {
    base_->read_data(i, box, out, pad);
  }
  void read_seg(int64_t i, const Box& box, int16_t* out, int16_t pad) const override {
    base_->read_seg(i, box, out, pad);
  }
  const std::vector<int>& previous_stage_labels() const override { return labels_; }
  void read_previous_stage(int64_t i, const Box& box, int16_t* out, int16_t pad) const override;

 private:
  std::shared_ptr<const CaseSource> base_;
  std::vector<int> labels_;
  std::vector<preprocessing::SegmentationFile> segs_;
};

// Where a case's previous-stage segmentation lives.
std::string previous_stage_file(const std::string& folder, const std::string& id);

// Opens case `id`'s previous-stage segmentation in `folder` and checks it has the case's `shape`.
// Throws FileError naming the file, with `hint` (how to write it again), when it is missing,
// damaged or of another shape.
preprocessing::SegmentationFile open_previous_stage(const std::string& folder, const std::string& id,
                                                    const Shape3& shape, const std::string& hint);

}  // namespace medseg::data
