#include "io/image_folder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "core/error.h"
#include "core/strings.h"
#include "io/dicom_series.h"
#include "io/image_formats.h"

namespace fs = std::filesystem;

namespace medseg::io {

std::map<int, std::string> dicom_case_channels(const std::string& dir) {
  std::map<int, std::string> channels;
  if (is_dicom_folder(dir)) {
    channels[0] = dir;
    return channels;
  }
  if (!fs::is_directory(dir)) return channels;
  static const std::regex channel("^\\d{4}$");
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && std::regex_match(name, channel) && is_dicom_folder(e.path().string()))
      channels[std::stoi(name)] = e.path().string();
  }
  return channels;
}

namespace {

// A DICOM case folder joins the scan unless files already named its case (or the other way round).
bool add_dicom_case(ImageFolderScan& scan, const fs::path& dir) {
  std::map<int, std::string> channels = dicom_case_channels(dir.string());
  if (channels.empty()) return false;
  const std::string id = dir.filename().string();
  if (scan.cases.count(id)) {
    scan.problems.push_back(dir.string() + ": case '" + id + "' is given both as this DICOM series folder and as " +
                            scan.cases[id].begin()->second);
    return true;
  }
  scan.cases[id] = std::move(channels);
  return true;
}

}  // namespace

ImageFolderScan scan_image_folder(const std::string& folder, const std::string& ending, bool allow_plain) {
  ImageFolderScan scan;
  const std::regex re("^(.+)_(\\d{4})$");
  std::vector<fs::path> dirs;  // after the files, so that a case given both ways is found whatever the order
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.') continue;
    if (e.is_directory()) {
      dirs.push_back(e.path());
      continue;
    }
    const std::string stem =
        e.is_regular_file() && ends_with(name, ending) ? name.substr(0, name.size() - ending.size()) : "";
    std::smatch m;
    if (!stem.empty() && std::regex_match(stem, m, re))
      scan.cases[m[1].str()][std::stoi(m[2].str())] = e.path().string();
    else if (!stem.empty() && allow_plain)
      scan.cases[stem][0] = e.path().string();
    else
      scan.stray.push_back(e.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs)
    if (!add_dicom_case(scan, d)) scan.stray.push_back(d.string());
  return scan;
}

std::vector<std::string> files_with_ending(const std::string& folder, const std::string& ending) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string n = e.path().filename().string();
    if (e.is_regular_file() && n.size() > ending.size() && ends_with(n, ending)) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void copy_dataset_jsons(const std::string& from, const std::string& to) {
  for (const char* f : {"dataset.json", "plans.json"}) {
    const fs::path src = fs::path(from) / f;
    if (!fs::exists(src)) continue;
    // copy_file would say "Operation not supported" of a folder, naming neither it nor the problem.
    MEDSEG_CHECK_FILE(fs::is_regular_file(src), src.string(),
                      fs::is_directory(src) ? "is a folder, not a file" : "is not a regular file");
    fs::copy_file(src, fs::path(to) / f, fs::copy_options::overwrite_existing);
  }
}

std::string channel_file(const std::string& folder, const std::string& id, int c, const std::string& ending) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "_%04d", c);
  return (fs::path(folder) / (id + buf + ending)).string();
}

std::string dicom_channel_folder(const std::string& folder, const std::string& id, int c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d", c);
  return (fs::path(folder) / id / buf).string();
}

std::vector<std::string> files_holding_channels(const std::string& id, const std::map<int, std::string>& files,
                                                const std::string& folder, const std::string& ending, int n,
                                                const std::string& expected_by) {
  std::vector<std::string> out;
  int held = 0;
  for (int k = 0; held < n; ++k) {
    auto it = files.find(k);
    MEDSEG_CHECK_FILE(it != files.end(), channel_file(folder, id, k, ending), "missing: case '", id, "' has ", held,
                      " of the ", n, " channels ", expected_by, " in its first ", k, " file(s)");
    held += image_file_channels(it->second);
    out.push_back(it->second);
  }
  MEDSEG_CHECK_FILE(held == n, out.back(), "case '", id, "' holds ", held, " channels in ", out.size(), " file(s); ",
                    expected_by, " ", n);
  return out;
}

}  // namespace medseg::io
