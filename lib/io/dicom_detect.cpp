// DICOM recognised by content: io/dicom_series.h's is_dicom_file and is_dicom_folder, which need no
// DICOM library (a build without ITK still tells a DICOM input from a missing one).
#include <filesystem>
#include <fstream>

#include "io/dicom_series.h"

namespace fs = std::filesystem;

namespace medseg::io {

bool is_dicom_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) < 132) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.seekg(128);
  in.read(magic, 4);
  return in && std::string(magic, 4) == "DICM";
}

bool is_dicom_folder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return false;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.path().filename().string()[0] != '.' && is_dicom_file(e.path().string())) return true;
  return false;
}

}  // namespace medseg::io
