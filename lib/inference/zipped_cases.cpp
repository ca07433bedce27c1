#include "inference/zipped_cases.h"

#include <unistd.h>

#include <filesystem>
#include <random>

#include "core/error.h"
#include "core/strings.h"
#include "io/dicom_series.h"
#include "io/dicom_zip.h"

namespace fs = std::filesystem;

namespace medseg::inference {

namespace {

// The series folders of an extracted case: its channel folders 0000, 0001, ... in order, else the folder.
std::vector<std::string> series_folders(const std::string& dest, const std::string& zip, int num_channels) {
  std::vector<std::string> channels;
  for (int k = 0;; ++k) {
    char name[16];
    std::snprintf(name, sizeof name, "%04d", k);
    const fs::path p = fs::path(dest) / name;
    if (!fs::is_directory(p)) break;
    channels.push_back(p.string());
  }
  if (channels.empty() && io::is_dicom_folder(dest)) channels.push_back(dest);
  MEDSEG_CHECK_FILE(!channels.empty(), zip, "holds no DICOM files (recognised by the DICM preamble)");
  MEDSEG_CHECK_FILE(static_cast<int>(channels.size()) == num_channels, zip, "holds ", channels.size(),
                    " channel(s), the model takes ", num_channels, " (channel folders 0000, 0001, ... in the zip)");
  return channels;
}

}  // namespace

ZippedCases::~ZippedCases() {
  if (root_.empty()) return;
  std::error_code ec;
  fs::remove_all(root_, ec);
  guard_.release();
}

void ZippedCases::expand(std::vector<CaseInput>& cases, int num_channels) {
  for (CaseInput& c : cases) {
    if (!c.error.empty() || c.images.size() != 1 || !io::is_zip_file(c.images[0])) continue;
    if (root_.empty()) {
      std::random_device rd;
      root_ = (fs::temp_directory_path() / concat("medseg_dicom_zip_", ::getpid(), "_", rd())).string();
      fs::create_directory(root_);
      guard_ = RemoveOnSignal::tree(root_);
    }
    const std::string zip = c.images[0], dest = (fs::path(root_) / c.id).string();
    try {
      io::extract_dicom_zip(zip, dest);
      c.images = series_folders(dest, zip, num_channels);
    } catch (const std::exception& e) {
      c.error = e.what();
      c.images.clear();
    }
  }
}

}  // namespace medseg::inference
