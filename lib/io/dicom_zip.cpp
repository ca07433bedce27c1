#include "io/dicom_zip.h"

#include <filesystem>
#include <fstream>
#include <regex>

#include "core/error.h"
#include "core/strings.h"
#include "core/zip_archive.h"

namespace fs = std::filesystem;

namespace medseg::io {

bool is_zip_file(const std::string& path) {
  std::error_code ec;
  if (!ends_with(path, ".zip") || !fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in && std::string(magic, 4) == std::string("PK\3\4", 4);
}

void extract_dicom_zip(const std::string& zip, const std::string& dest) {
  const ZipReader reader(zip);
  const auto& entries = reader.entries();
  MEDSEG_CHECK_FILE(static_cast<int64_t>(entries.size()) <= kMaxDicomZipEntries, zip, entries.size(),
                    " entries, more than the ", kMaxDicomZipEntries, " a case may hold");
  uint64_t total = 0;
  for (const ZipEntry& e : entries) total += e.size;
  MEDSEG_CHECK_FILE(total <= static_cast<uint64_t>(kMaxDicomZipBytes), zip, total,
                    " bytes uncompressed, more than the ", kMaxDicomZipBytes, " a case may hold");
  fs::create_directories(fs::path(dest).parent_path());
  MEDSEG_CHECK_FILE(fs::create_directory(dest), dest, "exists already");
  static const std::regex channel("^\\d{4}$");
  for (const ZipEntry& e : entries) {
    if (e.directory) continue;
    const std::string parent = fs::path(e.name).parent_path().filename().string();
    fs::path folder(dest);
    if (std::regex_match(parent, channel)) {
      folder /= parent;
      fs::create_directories(folder);
    }
    reader.extract(e, (folder / std::to_string(e.index)).string());
  }
}

}  // namespace medseg::io
