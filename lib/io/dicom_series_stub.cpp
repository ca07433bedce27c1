// DICOM series when the build has no ITK (MEDSEG_WITH_ITK=OFF): every call explains why it fails.
#ifndef MEDSEG_WITH_ITK
#include "core/error.h"
#include "io/dicom_series.h"

namespace medseg::io {

static FileError no_itk(const std::string& path) {
  return FileError(path, "this medseg build reads no DICOM (configured with -DMEDSEG_WITH_ITK=OFF)");
}

std::vector<DicomSeriesEntry> list_dicom_series(const std::string& folder) { throw no_itk(folder); }
Volume read_dicom_series(const std::string& path, const std::string&) { throw no_itk(path); }
DicomSeriesFiles dicom_series_files(const std::string& path, const std::string&) { throw no_itk(path); }

}  // namespace medseg::io
#endif
