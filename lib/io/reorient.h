#pragma once
// nnU-Net's NibabelIOWithReorient: every volume brought to the closest canonical orientation (RAS)
// before the network sees it, and predictions brought back to the file's own orientation on export.
// The reorientation is nibabel's io_orientation + as_reoriented: each index axis (x, y, z of the file)
// goes to the RAS world axis it runs most along (ties to the lower axis, each world axis taken once, in
// index-axis order), flipped when it runs against it. Only axes are permuted and flipped: no voxel is
// interpolated, so reorient_back() restores the file's array and geometry exactly.
#include <array>
#include <string>

#include "core/json_io.h"
#include "core/volume.h"

namespace medseg::io {

// The dataset.json / plans.json name of the reorienting reader.
inline constexpr const char* kReorientingReader = "NibabelIOWithReorient";

struct Reorientation {
  std::array<int, 3> world_axis{0, 1, 2};         // index axis i (x, y, z) -> canonical index axis
  std::array<bool, 3> flip{false, false, false};  // index axis i reversed
  bool identity() const;
  bool operator==(const Reorientation& o) const { return world_axis == o.world_axis && flip == o.flip; }
};

// io_orientation of a volume's geometry (ITK's LPS direction turned into nibabel's RAS).
Reorientation ras_reorientation(const Geometry& g);

// The volume in canonical orientation: array axes permuted and flipped; spacing, origin and direction
// describe the same voxels in the world (the origin moves to the voxel that becomes index 0).
Volume reorient(const Volume& v, const Reorientation& r);

// The inverse: a canonical-orientation volume (e.g. a segmentation) back in the file's array order with
// the file's geometry `file_geometry`. Throws Error when the shape cannot be the reoriented one.
Volume reorient_back(const Volume& v, const Reorientation& r, const Geometry& file_geometry);

// The same on a float buffer of `n` volumes (e.g. class probabilities), each of the canonical shape.
std::vector<float> reorient_back_channels(const std::vector<float>& data, int64_t n,
                                          const std::array<int64_t, 3>& shape, const Reorientation& r);

json reorientation_to_json(const Reorientation& r);
// Throws FileError naming `source` for a malformed value (not a permutation, flips not booleans).
Reorientation reorientation_from_json(const json& j, const std::string& source);

}  // namespace medseg::io
