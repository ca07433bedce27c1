#pragma once
// What the DICOM writers of lib/io share (io/dicom_seg.h: the SEG and the RTSTRUCT): the series they reference,
// decimal strings and saving a file atomically. Internal to lib/io; DCMTK stays out of the header.
#include <string>

#include "core/volume.h"
#include "io/dicom_series.h"

class DcmFileFormat;  // DCMTK's

namespace medseg::io {

// The slices of the series in `source` (`series_uid`, or its only one) that an output at `path` references, with
// `labels` checked to lie on their grid: FileError(path, "cannot write the <what>: the label map is not on the grid
// of the series in <source>") otherwise.
DicomSeriesFiles referenced_series(const std::string& path, const Volume& labels, const std::string& source,
                                   const std::string& series_uid, const std::string& what);

// A DICOM decimal string (DS): at most 16 characters.
std::string decimal_string(double v);

// Saves `file` at `path` through a temporary file renamed into place, so that a reader never sees half a
// file and a failure leaves nothing. FileError("cannot write the <what>: saving (...)") on failure.
void save_atomically(DcmFileFormat& file, const std::string& path, const std::string& what);

}  // namespace medseg::io
