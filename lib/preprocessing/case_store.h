#pragma once
// The preprocessed-case store: what medseg_preprocess writes and the training data loader reads.
//
// Per case, in MEDSEG_PREPROCESSED/DatasetXXX_Name/<data_identifier>/ (docs/preprocessing.md):
//   CASE.npy       float32 (C, Z, Y, X), numpy format 1.0, C order, little endian
//   CASE_seg.npy   int8 (1, Z, Y, X), or int16 when a label exceeds 127; -1 = outside the nonzero mask
//   CASE.json      CaseProperties (versioned), written last: a case is complete when its JSON exists
// The reader maps both .npy files read-only (POSIX mmap), so a patch read touches only the pages
// the patch covers and several threads may read one case at once.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.h"
#include "core/volume.h"
#include "fingerprint/crop.h"
#include "io/reorient.h"
#include "preprocessing/class_locations.h"
#include "preprocessing/transpose.h"

namespace medseg::preprocessing {

constexpr int kCasePropertiesVersion = 1;

using Spacing3 = std::array<double, 3>;

struct CaseProperties {
  int version = kCasePropertiesVersion;
  std::string id;
  // The raw case, as read (array order (z, y, x), before transpose and crop).
  Shape3 original_shape{0, 0, 0};
  Spacing3 original_spacing{1, 1, 1};  // (z, y, x) mm: nnU-Net's properties['spacing']
  Geometry original_geometry;          // ITK's spacing/origin (x, y, z) and direction
  // NibabelIOWithReorient (io/reorient.h): the original_* fields above describe the case in canonical
  // orientation, `reorientation` took it there from the file, whose own geometry is `file_geometry`.
  std::optional<io::Reorientation> reorientation;
  Geometry file_geometry;
  // What preprocessing did, in order. Shapes and boxes after the transpose are transposed arrays.
  Perm3 transpose_forward{0, 1, 2};
  Shape3 shape_before_cropping{0, 0, 0};  // after transpose
  Box bbox_used_for_cropping;
  Shape3 shape_after_cropping_and_before_resampling{0, 0, 0};
  Spacing3 spacing_before_resampling{1, 1, 1};  // original spacing, transposed
  Spacing3 spacing_after_resampling{1, 1, 1};   // the configuration's (2d: first axis kept)
  Shape3 shape_after_resampling{0, 0, 0};       // = the stored arrays' (Z, Y, X)
  bool has_label = true;                        // false: seg holds only the 0/-1 mask
  std::vector<ClassLocations> class_locations;
};

json case_properties_to_json(const CaseProperties& p);
// Throws FileError naming `source` for a missing key, a wrong type or an unknown version.
CaseProperties case_properties_from_json(const json& j, const std::string& source);

// A preprocessed case in memory, as written.
struct CaseArrays {
  int channels = 0;
  Shape3 shape{0, 0, 0};     // (Z, Y, X)
  std::vector<float> data;   // (C, Z, Y, X)
  std::vector<int16_t> seg;  // (Z, Y, X)
};

// Writes CASE.npy, CASE_seg.npy and then CASE.json into `folder` (created), each atomically. With
// sync = false the files are not fsynced (call sync_filesystem(folder) after a batch of cases).
void write_preprocessed_case(const std::string& folder, const CaseProperties& props, const CaseArrays& arrays,
                             bool sync = true);

enum class SegDType { Int8, Int16 };

namespace detail {
struct NpyMapping;  // one read-only mmap of a .npy file (case_store.cpp)
}

// A read-only view of one stored case. Cheap to copy (the mappings are shared); the pointers stay
// valid while any copy lives.
class PreprocessedCase {
 public:
  const std::string& id() const { return props_.id; }
  const CaseProperties& properties() const { return props_; }
  int num_channels() const { return channels_; }
  const Shape3& shape() const { return shape_; }  // (Z, Y, X)
  int64_t voxels() const { return shape_[0] * shape_[1] * shape_[2]; }

  const float* data() const { return data_ptr_; }  // (C, Z, Y, X)
  const float* channel(int c) const { return data_ptr_ + c * voxels(); }

  SegDType seg_dtype() const { return seg_dtype_; }
  const int8_t* seg_int8() const {
    return seg_dtype_ == SegDType::Int8 ? static_cast<const int8_t*>(seg_ptr_) : nullptr;
  }
  const int16_t* seg_int16() const {
    return seg_dtype_ == SegDType::Int16 ? static_cast<const int16_t*>(seg_ptr_) : nullptr;
  }
  int seg_at(int64_t z, int64_t y, int64_t x) const;

 private:
  friend PreprocessedCase open_preprocessed_case(const std::string& folder, const std::string& id);
  std::shared_ptr<const detail::NpyMapping> data_map_, seg_map_;
  CaseProperties props_;
  int channels_ = 0;
  Shape3 shape_{0, 0, 0};
  const float* data_ptr_ = nullptr;
  const void* seg_ptr_ = nullptr;
  SegDType seg_dtype_ = SegDType::Int8;
};

// A segmentation stored on its own, as CASE_seg.npy is ((1, Z, Y, X) int8, or int16 when a value
// exceeds int8): the cascade's previous-stage predictions (predicted_next_stage/, docs/cascade.md).
// Mapped read-only like a case; cheap to copy.
class SegmentationFile {
 public:
  const std::string& path() const { return path_; }
  const Shape3& shape() const { return shape_; }
  SegDType dtype() const { return dtype_; }

 private:
  friend SegmentationFile open_segmentation_file(const std::string& path);
  friend void read_seg_patch(const SegmentationFile& f, const Box& box, int16_t* out, int16_t pad_value);
  std::shared_ptr<const detail::NpyMapping> map_;
  std::string path_;
  Shape3 shape_{0, 0, 0};
  SegDType dtype_ = SegDType::Int8;
  const void* ptr_ = nullptr;
};

// Writes `seg` ((Z, Y, X) = `shape`) atomically. Throws Error when the sizes disagree.
void write_segmentation_file(const std::string& path, const Shape3& shape, const std::vector<int16_t>& seg,
                             bool sync = true);
// Throws FileError naming `path` for a missing, truncated or foreign file.
SegmentationFile open_segmentation_file(const std::string& path);
void read_seg_patch(const SegmentationFile& f, const Box& box, int16_t* out, int16_t pad_value = -1);

// Opens folder/ID.{npy,_seg.npy,json}. Throws FileError naming the file for a missing, truncated or
// foreign file (wrong magic, dtype, order or shape) and for arrays that disagree with each other or
// with the JSON.
PreprocessedCase open_preprocessed_case(const std::string& folder, const std::string& id);

// Ids of the complete cases in `folder` (ID.json with ID.npy and ID_seg.npy next to it), sorted.
std::vector<std::string> list_preprocessed_cases(const std::string& folder);

// Copies box `box` of every channel into `out` (C * box.numel() floats, layout (C, z, y, x) of the
// box). Voxels of the box outside the volume get `pad_value`. Reads only the rows the box covers.
void read_patch(const PreprocessedCase& c, const Box& box, float* out, float pad_value = 0.0f);

// The same for the segmentation (box.numel() values); nnU-Net pads segmentations with -1.
void read_seg_patch(const PreprocessedCase& c, const Box& box, int16_t* out, int16_t pad_value = -1);

}  // namespace medseg::preprocessing
