#include "data/previous_stage_source.h"

#include <filesystem>

#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg::data {

std::string previous_stage_file(const std::string& folder, const std::string& id) {
  return (fs::path(folder) / (id + ".npy")).string();
}

preprocessing::SegmentationFile open_previous_stage(const std::string& folder, const std::string& id,
                                                    const Shape3& shape, const std::string& hint) {
  const std::string file = previous_stage_file(folder, id);
  MEDSEG_CHECK_FILE(fs::exists(file), file, "previous-stage segmentation not found; ", hint);
  preprocessing::SegmentationFile seg = preprocessing::open_segmentation_file(file);
  MEDSEG_CHECK_FILE(seg.shape() == shape, file, "shape ", shape_str(seg.shape()),
                    " differs from the preprocessed case's ", shape_str(shape), "; ", hint);
  return seg;
}

PreviousStageSource::PreviousStageSource(std::shared_ptr<const CaseSource> base, const std::string& folder,
                                         std::vector<int> labels, const std::string& hint)
    : base_(std::move(base)), labels_(std::move(labels)) {
  MEDSEG_CHECK(base_, "PreviousStageSource: no cases");
  MEDSEG_CHECK(!labels_.empty(), "PreviousStageSource: a cascade needs at least one foreground label");
  for (int64_t i = 0; i < base_->size(); ++i)
    segs_.push_back(open_previous_stage(folder, base_->id(i), base_->shape(i), hint));
}

void PreviousStageSource::read_previous_stage(int64_t i, const Box& box, int16_t* out, int16_t pad) const {
  preprocessing::read_seg_patch(segs_.at(static_cast<size_t>(i)), box, out, pad);
}

}  // namespace medseg::data
