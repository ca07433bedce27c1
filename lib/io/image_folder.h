#pragma once
// One scanner for folders of nnU-Net-named images (CASE_XXXX<file_ending>), shared by the case
// listing (training, prediction) and by medseg_verify_dataset, which also reports what does not fit.
#include <map>
#include <string>
#include <vector>

namespace medseg::io {

struct ImageFolderScan {
  std::map<std::string, std::map<int, std::string>> cases;  // case id -> channel index -> path
  std::vector<std::string> stray;                            // entries that are not CASE_XXXX<ending>
};

// Hidden entries are skipped. With allow_plain, "CASE<ending>" counts as channel 0 of CASE (a
// single-channel model's plain input files).
ImageFolderScan scan_image_folder(const std::string& folder, const std::string& file_ending, bool allow_plain);

// folder/CASE_XXXX<file_ending>
std::string channel_file(const std::string& folder, const std::string& id, int channel, const std::string& file_ending);

}  // namespace medseg::io
