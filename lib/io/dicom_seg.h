#pragma once
// A label map as a DICOM Segmentation object (SEG) or RT Structure Set (RTSTRUCT) that references the series
// it was predicted from, written with DCMTK (docs/dicom.md, "DICOM output"). The SEG (dcmseg) has binary
// segments, one per label that occurs; empty frames are left out (an empty label map keeps the first
// segment's frame of slice 1). The RTSTRUCT (dcmdata) is io/dicom_rtstruct_dcmtk.cpp.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/volume.h"

namespace medseg::io {

// A coded concept: code value, coding scheme designator, code meaning (e.g. 10200004, SCT, Liver).
struct DicomCode {
  std::string value, scheme, meaning;
};

struct DicomSegSegment {
  int64_t label = 0;                      // the value in the label map
  std::string name;                       // Segment Label (dataset.json's name)
  DicomCode category;                     // Segmented Property Category
  DicomCode type;                         // Segmented Property Type
  std::array<uint8_t, 3> rgb{255, 0, 0};  // written as the Recommended Display CIELab Value
};

struct DicomSegInfo {
  std::vector<DicomSegSegment> segments;
  std::string algorithm = "medseg";  // Segment Algorithm Name
  std::string version;               // Algorithm Version and Software Versions
  std::string description;           // Series and Content Description: the model, its configuration and folds
  std::string parameters;            // Algorithm Parameters: the model folder and its folds, in full
};

// The generic concepts a label gets without a dicom_codes.json: category Anatomical Structure
// (SCT 91723000), type Tissue (SCT 85756007).
DicomCode generic_category();
DicomCode generic_type();

// Writes `labels` (on the grid of the series in `source`, as read_dicom_series returns it) to `path` as a
// SEG that shares the source's patient, study and frame of reference, references each source slice a
// frame was derived from, and the series as a whole. Written atomically (a temporary file renamed into
// place). Throws FileError naming the file for a grid that is not the series', a label map that is not
// integer, or a DCMTK failure.
void write_dicom_seg(const std::string& path, const Volume& labels, const std::string& source,
                     const std::string& series_uid, const DicomSegInfo& info);

// The same label map as an RT Structure Set (RTSTRUCT): one ROI per segment of `info` that has a voxel,
// named and coloured likewise, its outlines on each slice closed planar contours in patient coordinates
// (io/mask_contours.h), each referencing its source slice. Written atomically; FileError as above.
void write_dicom_rtstruct(const std::string& path, const Volume& labels, const std::string& source,
                          const std::string& series_uid, const DicomSegInfo& info);

}  // namespace medseg::io
