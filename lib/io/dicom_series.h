#pragma once
// DICOM image series as volumes: GDCM (through ITK's GDCMImageIO) decodes, medseg checks the series.
// docs/dicom.md has the layout, the checks and what is refused.
//
// A series is the image files of one folder that share a Series Instance UID. Files are recognised by
// content (the "DICM" preamble), not by name. The volume's geometry comes from Image Position and
// Orientation (Patient) and Pixel Spacing, slices sorted along the slice normal; pixels are Rescale
// Slope/Intercept applied (CT in HU), MONOCHROME1 inverted. An enhanced multi-frame file (one file that
// holds the whole series) takes the geometry GDCM reads from its functional groups.
//
// Refused with FileError naming the folder (or file) and the problem: several series (unless
// `series_uid` picks one), a slice missing or slice spacing that varies by more than 1 %, gantry tilt,
// mixed orientations, pixel spacings or sizes, two slices at one position, only non-image objects
// (SR, PR, SEG, RTSTRUCT, ...), a file named .dcm that is not DICOM, pixel data that cannot be decoded
// (the transfer syntax is named), and a series larger than kMaxDicomVoxels.
#include <cstdint>
#include <string>
#include <vector>

#include "core/volume.h"

namespace medseg::io {

constexpr int64_t kMaxDicomVoxels = int64_t(1) << 31;  // 8 GiB as float32

// True when `path` is a regular file that starts with the DICOM preamble (128 bytes, then "DICM").
bool is_dicom_file(const std::string& path);

// True when `folder` is a directory that directly holds at least one DICOM file.
bool is_dicom_folder(const std::string& folder);

// One series of a folder, as the refusal for several series lists them.
struct DicomSeriesEntry {
  std::string uid;
  std::string description;  // Series Description, "" when absent
  std::string modality;
  int files = 0;
};

// The image series directly in `folder`, sorted by UID. Throws FileError for a folder without DICOM files.
std::vector<DicomSeriesEntry> list_dicom_series(const std::string& folder);

// Reads the series in `folder` (or the one whose Series Instance UID is `series_uid`) as a float32 volume.
// `path` may also be one DICOM file: the series of that one file (a multi-frame object, or one slice).
Volume read_dicom_series(const std::string& path, const std::string& series_uid = "");

// A source slice as other objects reference it.
struct DicomInstance {
  std::string file, sop_class, sop_instance;
  int64_t frame = 0;  // the frame (from 1) of an enhanced multi-frame object that holds the slice; 0: one slice
};

// The slices of a series in the order read_dicom_series stacks them: slice z is instances[z], with the SOP
// Class and Instance UIDs read with its header (and, for an enhanced multi-frame object, the frame that holds
// it). For objects that reference the series (io/dicom_seg.h). A slice without those UIDs is refused.
struct DicomSeriesFiles {
  std::vector<DicomInstance> instances;
  Geometry geometry;
  std::array<int64_t, 3> shape{};  // (z, y, x), as the volume read_dicom_series returns
};
DicomSeriesFiles dicom_series_files(const std::string& path, const std::string& series_uid = "");

}  // namespace medseg::io
