#include <dcmtk/dcmdata/dctk.h>

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "io/dicom_write.h"

namespace fs = std::filesystem;

namespace medseg::io {

std::string decimal_string(double v) {
  std::ostringstream out;
  out.precision(10);
  out << v;
  std::string s = out.str();
  if (s.size() > 16) {  // a large or long-tailed value: fewer digits
    out.str("");
    out.precision(8);
    out << v;
    s = out.str();
  }
  return s;
}

void save_atomically(DcmFileFormat& file, const std::string& path, const std::string& what) {
  const std::string tmp = path + ".tmp-medseg";
  const OFCondition saved = file.saveFile(tmp.c_str(), EXS_LittleEndianExplicit);
  if (saved.bad()) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw FileError(path, "cannot write the " + what + ": saving (" + saved.text() + ")");
  }
  fs::rename(tmp, path);
}

DicomSeriesFiles referenced_series(const std::string& path, const Volume& labels, const std::string& source,
                                   const std::string& series_uid, const std::string& what) {
  DicomSeriesFiles src = dicom_series_files(source, series_uid);
  MEDSEG_CHECK_FILE(labels.shape() == src.shape &&
                        geometry_mismatch(labels.geometry(), labels.shape(), src.geometry, src.shape).empty(),
                    path, "cannot write the ", what, ": the label map is not on the grid of the series in ", source);
  return src;
}

}  // namespace medseg::io
