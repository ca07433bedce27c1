// medseg_verify_dataset's checks: every problem is collected (not just the first), so a user can
// fix a dataset in one pass.
#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "core/strings.h"
#include "io/case_loader.h"
#include "io/dataset.h"
#include "io/image_folder.h"
#include "io/image_formats.h"
#include "io/image_io.h"
#include "io/label_check.h"

namespace fs = std::filesystem;

namespace medseg::io {
namespace {

// A 3D TIFF dataset keeps each case's spacing in a JSON sidecar beside its files (image_formats.h).
bool tiff_sidecar(const DatasetInfo& info, const std::string& path) {
  return image_family("x" + info.file_ending) == ImageFamily::Tiff && ends_with(path, ".json");
}

// Files and folders in imagesTr that are no case's channel (a TIFF stack's .json sidecar is one).
void stray_problems(const DatasetInfo& info, const ImageFolderScan& scan, std::vector<std::string>& problems) {
  for (const auto& path : scan.stray)
    if (!tiff_sidecar(info, path))
      problems.push_back(path + (fs::is_directory(path) ? ": unexpected folder (not a DICOM series folder)"
                                                        : ": unexpected file (expected CASE_XXXX" + info.file_ending +
                                                              " or a DICOM series folder)"));
  problems.insert(problems.end(), scan.problems.begin(), scan.problems.end());
}

// One case's channels against dataset.json's, and its label file.
void case_layout_problems(const DatasetInfo& info, const std::string& id, const std::map<int, std::string>& files,
                          std::vector<std::string>& problems) {
  const fs::path images = fs::path(info.folder) / "imagesTr", labels = fs::path(info.folder) / "labelsTr";
  const bool dicom = fs::is_directory(files.begin()->second);
  for (const auto& [c, path] : files)
    if (c >= info.num_channels())
      problems.push_back(
          concat(path, ": channel ", c, " but dataset.json declares ", info.num_channels(), " channel(s)"));
  for (int c = 0; c < info.num_channels(); ++c)
    if (!files.count(c))
      problems.push_back(concat(
          dicom ? dicom_channel_folder(images.string(), id, c) : channel_file(images.string(), id, c, info.file_ending),
          ": missing channel ", c, " of case '", id, "'"));
  if (!fs::exists(labels / (id + info.file_ending)))
    problems.push_back((labels / (id + info.file_ending)).string() + ": label file missing for case '" + id + "'");
}

// Label files in labelsTr without a case in imagesTr.
void orphan_label_problems(const DatasetInfo& info, const std::map<std::string, std::map<int, std::string>>& found,
                           std::vector<std::string>& problems) {
  const fs::path labels = fs::path(info.folder) / "labelsTr";
  if (!fs::is_directory(labels)) return;
  for (const auto& e : fs::directory_iterator(labels)) {
    const std::string n = e.path().filename().string();
    if (n[0] == '.' || tiff_sidecar(info, n)) continue;
    if (!ends_with(n, info.file_ending) || !found.count(n.substr(0, n.size() - info.file_ending.size())))
      problems.push_back(e.path().string() + ": label without matching images in imagesTr");
  }
}

// Folder-level problems: stray files, missing channels, labels without images and vice versa. `found`
// gets each case's channel files (or DICOM series folders) as the scan found them.
void check_layout(const DatasetInfo& info, std::vector<std::string>& problems,
                  std::map<std::string, std::map<int, std::string>>& found) {
  const fs::path images = fs::path(info.folder) / "imagesTr", labels = fs::path(info.folder) / "labelsTr";
  if (!fs::is_directory(images)) {
    problems.push_back(images.string() + ": folder not found");
    return;
  }
  if (!fs::is_directory(labels)) problems.push_back(labels.string() + ": folder not found");
  const ImageFolderScan scan = scan_image_folder(images.string(), info.file_ending, false);
  stray_problems(info, scan, problems);
  found = scan.cases;
  for (const auto& [id, files] : scan.cases) case_layout_problems(info, id, files, problems);
  orphan_label_problems(info, found, problems);
  if (static_cast<int>(found.size()) != info.num_training)
    problems.push_back(concat((fs::path(info.folder) / "dataset.json").string(), ": numTraining is ", info.num_training,
                              " but imagesTr holds ", found.size(), " case(s)"));
}

// Content problems of one case: unreadable files, bad geometry, grid mismatch, NaN/Inf, label
// values dataset.json does not declare.
std::vector<std::string> check_case(const CaseFiles& c, const std::vector<int>& declared, int channels) {
  std::vector<std::string> out;
  LoadedCase lc;
  try {
    lc = load_case(c);
  } catch (const Error& e) {
    out.push_back(e.what());
    return out;
  }
  // An RGB(A) or color-palette file is several channels (NaturalImage2DIO): in a set that declares one,
  // fingerprinting would refuse it later.
  if (static_cast<int>(lc.channels.size()) != channels)
    out.push_back(concat(c.images.at(0), ": case '", c.id, "' holds ", lc.channels.size(),
                         " channel(s) (an RGB(A) or color-palette image is 3 or 4) but dataset.json declares ",
                         channels));
  // NaN/Inf voxels and non-integer labels already failed load_case (read_image/read_label name the file).
  const std::string labels = undeclared_labels_problem(lc.label, declared);
  if (!labels.empty()) out.push_back(c.label + ": case '" + c.id + "': " + labels);
  return out;
}

}  // namespace

std::vector<std::string> verify_dataset(const DatasetInfo& info, int threads) {
  std::vector<std::string> problems;
  std::map<std::string, std::map<int, std::string>> found;
  if (info.raw.contains("dataset")) {
    try {
      list_training_cases(info);
    } catch (const Error& e) {
      problems.push_back(e.what());
      return problems;
    }
  } else {
    check_layout(info, problems, found);
  }
  // Check content of every case whose files are all present.
  std::vector<CaseFiles> cases;
  if (info.raw.contains("dataset")) {
    cases = list_training_cases(info);
  } else {
    const fs::path root(info.folder);
    for (const auto& [id, files] : found) {
      CaseFiles c{id, {}, (root / "labelsTr" / (id + info.file_ending)).string()};
      bool ok = fs::exists(c.label);
      for (int k = 0; k < info.num_channels(); ++k) {
        const auto it = files.find(k);
        ok = ok && it != files.end();
        if (ok) c.images.push_back(it->second);
      }
      if (ok) cases.push_back(c);
    }
  }
  const std::vector<int> declared = info.label_values();
  std::vector<std::vector<std::string>> per_case(cases.size());
  ProgressBar bar("verify", static_cast<int64_t>(cases.size()));
  parallel_for(static_cast<int64_t>(cases.size()), threads, [&](int64_t i) {
    per_case[static_cast<size_t>(i)] = check_case(cases[static_cast<size_t>(i)], declared, info.num_channels());
    bar.tick();
  });
  bar.finish();
  for (auto& v : per_case) problems.insert(problems.end(), v.begin(), v.end());
  return problems;
}

}  // namespace medseg::io
