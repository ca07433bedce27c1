#pragma once
// Loads one case (all channels + label) and checks that they share one grid.
#include <optional>
#include <string>
#include <vector>

#include "core/volume.h"
#include "io/dataset.h"
#include "io/reorient.h"

namespace medseg::io {

struct LoadedCase {
  std::string id;
  std::vector<Volume> channels;  // float32, channel order
  Volume label;                  // integer; numel()==0 when the case has none
  // With reorient_to_ras: how the volumes above were brought to canonical orientation, and the files'
  // own geometry, for writing predictions back (io/reorient.h).
  std::optional<Reorientation> reorientation;
  Geometry file_geometry;
  Geometry geometry() const { return channels.at(0).geometry(); }
  std::array<int64_t, 3> shape() const { return channels.at(0).shape(); }
};

// Reads every channel (converted to float32) and the label; throws FileError naming both files
// when a channel or the label differs in shape, spacing (1e-4 relative), origin or direction.
// reorient_to_ras: nnU-Net's NibabelIOWithReorient; every volume is brought to the closest canonical
// orientation of the first channel's geometry after the grid checks (which see the files as they are).
// dicom_series_uid: of a case folder that holds several DICOM series, the one to read (--series_uid;
// io/dicom_series.h); "" reads the folder's only series.
LoadedCase load_case(const CaseFiles& files, bool reorient_to_ras = false, const std::string& dicom_series_uid = "");

// The same from volumes already in memory (an embedding program's image, api/segmenter.h): every
// channel converted to float32; throws Error naming the channel that does not share channel 0's grid.
LoadedCase case_from_volumes(const std::string& id, std::vector<Volume> channels, bool reorient_to_ras = false);

// The same grid check on already-loaded volumes; "" when they agree.
std::string grid_mismatch(const Volume& a, const Volume& b);

}  // namespace medseg::io
