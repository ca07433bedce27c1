// DICOM series when the build has no ITK (MEDSEG_WITH_ITK=OFF): every call explains why it fails.
#ifndef MEDSEG_WITH_ITK
#include "core/error.h"
#include "io/dicom_seg.h"
#include "io/dicom_series.h"

namespace medseg::io {

static FileError no_itk(const std::string& path) {
  return FileError(path, "this medseg build reads no DICOM (configured with -DMEDSEG_WITH_ITK=OFF)");
}

std::vector<DicomSeriesEntry> list_dicom_series(const std::string& folder) { throw no_itk(folder); }
Volume read_dicom_series(const std::string& path, const std::string&) { throw no_itk(path); }
DicomSeriesFiles dicom_series_files(const std::string& path, const std::string&) { throw no_itk(path); }
DicomCode generic_category() { return {"91723000", "SCT", "Anatomical Structure"}; }
DicomCode generic_type() { return {"85756007", "SCT", "Tissue"}; }
void write_dicom_seg(const std::string& path, const Volume&, const std::string&, const std::string&,
                     const DicomSegInfo&) {
  throw no_itk(path);
}
void write_dicom_rtstruct(const std::string& path, const Volume&, const std::string&, const std::string&,
                          const DicomSegInfo&) {
  throw no_itk(path);
}

}  // namespace medseg::io
#endif
