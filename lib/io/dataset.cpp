#include "io/dataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "io/reorient.h"
#include "core/error.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core/strings.h"
#include "io/image_folder.h"
#include "io/image_formats.h"
#include "io/image_io.h"

namespace fs = std::filesystem;

namespace medseg::io {

std::vector<int> DatasetInfo::label_values() const {
  std::set<int> all;
  for (const auto& l : labels) all.insert(l.values.begin(), l.values.end());
  if (raw.contains("ignore") && raw.at("ignore").is_number_integer()) {
    const int64_t v = raw.at("ignore").get<int64_t>();
    if (v >= 0 && v <= 32767) all.insert(static_cast<int>(v));
  }
  return {all.begin(), all.end()};
}

bool DatasetInfo::has_regions() const {
  return std::any_of(labels.begin(), labels.end(), [](const LabelDef& l) { return l.values.size() != 1; });
}

// Every file medseg writes for a case is named <case id><file_ending>: the ending must not reach out of
// the folder either.
static void check_file_ending(const std::string& ending, const std::string& file) {
  check_path_component(ending, "file_ending", file);
  MEDSEG_CHECK_FILE(ending[0] == '.', file, "file_ending '", printable(ending),
                    "' must start with '.' (e.g. \".nii.gz\")");
}

std::vector<std::string> channel_names_from_json(const ordered_json& j, const std::string& file) {
  const char* key = j.contains("channel_names") ? "channel_names" : (j.contains("modality") ? "modality" : nullptr);
  MEDSEG_CHECK_FILE(key, file, "missing key 'channel_names'");
  const ordered_json& c = j.at(key);
  MEDSEG_CHECK_FILE(c.is_object() && !c.empty(), file, "'", key, "' must be a non-empty object");
  std::vector<std::string> names(c.size());
  for (auto it = c.begin(); it != c.end(); ++it) {
    size_t idx = 0;
    try {
      idx = std::stoul(it.key());
    } catch (...) {
      throw FileError(file, std::string("'") + key + "' keys must be channel indices, got '" + it.key() + "'");
    }
    MEDSEG_CHECK_FILE(idx < names.size() && names[idx].empty() && it.value().is_string(), file, "'", key,
                      "' must map 0..N-1 to names (problem at '", it.key(), "')");
    names[idx] = it.value().get<std::string>();
  }
  return names;
}

// A label value of dataset.json: 0, 1, 2, ... (-1 is preprocessing's "outside the image").
static int label_value(const ordered_json& x, const std::string& name, const std::string& file) {
  MEDSEG_CHECK_FILE(x.is_number_unsigned() || x.get<int64_t>() >= 0, file, "label '", name, "' has the negative value ",
                    x.get<int64_t>(), "; label values are 0, 1, 2, ...");
  const uint64_t v = x.get<uint64_t>();
  MEDSEG_CHECK_FILE(v <= 32767, file, "label '", name, "' has the value ", v, "; at most 32767");
  return static_cast<int>(v);
}

// nnU-Net's LabelManager: the ignore label is one integer, the highest value (1 above every other label
// and region value), so that it is never a network output.
static void check_ignore_label(const ordered_json& labels, const std::vector<LabelDef>& defs, const std::string& file) {
  if (!labels.contains("ignore")) return;
  MEDSEG_CHECK_FILE(labels.at("ignore").is_number_integer(), file,
                    "label 'ignore' must be one integer (nnU-Net's ignore label), not a list");
  int highest = 0;
  for (const auto& d : defs)
    if (d.name != "ignore")
      for (int v : d.values) highest = std::max(highest, v);
  const int ignore = labels.at("ignore").get<int>();
  MEDSEG_CHECK_FILE(ignore == highest + 1, file, "the ignore label is ", ignore,
                    " but must be the highest label value, ", highest + 1,
                    " (one above every other label, as nnU-Net requires)");
}

std::vector<LabelDef> labels_from_json(const ordered_json& j, const std::string& file) {
  MEDSEG_CHECK_FILE(j.contains("labels") && j.at("labels").is_object() && !j.at("labels").empty(), file,
                    "missing or empty 'labels' (expected {\"background\": 0, ...})");
  MEDSEG_CHECK_FILE(j.at("labels").size() <= kMaxLabels, file, "'labels' has ", j.at("labels").size(),
                    " entries; medseg reads up to ", kMaxLabels, " (nnU-Net stores segmentations as int16)");
  std::vector<LabelDef> out;
  std::set<int> seen;
  for (auto it = j.at("labels").begin(); it != j.at("labels").end(); ++it) {
    LabelDef d{it.key(), {}};
    const ordered_json& v = it.value();
    if (v.is_number_integer()) {
      d.values.push_back(label_value(v, it.key(), file));
    } else if (v.is_array() && !v.empty() &&
               std::all_of(v.begin(), v.end(), [](const ordered_json& x) { return x.is_number_integer(); })) {
      for (const auto& x : v) d.values.push_back(label_value(x, it.key(), file));
    } else {
      throw FileError(file, "label '" + it.key() + "' must be an integer or a list of integers");
    }
    MEDSEG_CHECK_FILE(d.values.size() != 1 || seen.insert(d.values[0]).second, file, "label value ", d.values[0],
                      " is used twice");
    out.push_back(d);
  }
  MEDSEG_CHECK_FILE(seen.count(0), file, "labels must include background = 0");
  check_ignore_label(j.at("labels"), out, file);
  // nnU-Net requires consecutive plain labels 0..K (region datasets list their values instead).
  if (std::any_of(out.begin(), out.end(), [](const LabelDef& d) { return d.values.size() != 1; })) return out;
  int expect = 0;
  for (int v : seen) {
    MEDSEG_CHECK_FILE(v == expect, file, "label values must be consecutive integers starting at 0 (missing ", expect,
                      ")");
    ++expect;
  }
  return out;
}

int64_t network_outputs(const std::vector<LabelDef>& labels) {
  const bool regions =
      std::any_of(labels.begin(), labels.end(), [](const LabelDef& l) { return l.values.size() != 1; });
  int64_t n = 0;
  for (const auto& l : labels) {
    if (l.name == "ignore") continue;
    if (regions && l.values.size() == 1 && l.values[0] == 0) continue;  // regions: background is no output
    ++n;
  }
  return n;
}

std::vector<std::vector<int>> foreground_regions(const std::vector<LabelDef>& labels) {
  const bool regions =
      std::any_of(labels.begin(), labels.end(), [](const LabelDef& l) { return l.values.size() != 1; });
  std::vector<std::vector<int>> out;
  if (!regions) return out;
  for (const auto& l : labels)
    if (l.name != "ignore" && !(l.values.size() == 1 && l.values[0] == 0)) out.push_back(l.values);
  return out;
}

std::optional<int> ignore_label(const std::vector<LabelDef>& labels) {
  for (const auto& l : labels)
    if (l.name == "ignore" && l.values.size() == 1) return l.values[0];
  return std::nullopt;
}

std::vector<int> foreground_labels(const std::vector<LabelDef>& labels) {
  const std::optional<int> ignore = ignore_label(labels);
  std::set<int> fg;
  for (const auto& l : labels)
    for (int v : l.values)
      if (v != 0 && v != ignore) fg.insert(v);
  return {fg.begin(), fg.end()};
}

DatasetInfo load_dataset_info(const std::string& dataset_folder) {
  const std::string file = (fs::path(dataset_folder) / "dataset.json").string();
  MEDSEG_CHECK_FILE(fs::is_directory(dataset_folder), dataset_folder, "dataset folder not found");
  DatasetInfo info = dataset_info_from_json(read_ordered_json(file), file);
  info.folder = dataset_folder;
  info.name = fs::path(dataset_folder).lexically_normal().filename().string();
  if (info.name.empty()) info.name = fs::path(dataset_folder).lexically_normal().parent_path().filename().string();
  return info;
}

DatasetInfo dataset_info_from_json(const ordered_json& j, const std::string& file) {
  DatasetInfo info;
  info.raw = j;
  MEDSEG_CHECK_FILE(info.raw.is_object(), file, "must be a JSON object");
  info.channel_names = channel_names_from_json(info.raw, file);
  info.labels = labels_from_json(info.raw, file);
  MEDSEG_CHECK_FILE(info.raw.contains("numTraining") && info.raw.at("numTraining").is_number_integer(), file,
                    "missing or non-integer 'numTraining'");
  info.num_training = info.raw.at("numTraining").get<int>();
  MEDSEG_CHECK_FILE(info.raw.contains("file_ending"), file, "missing 'file_ending' (e.g. \".nii.gz\")");
  info.file_ending = file_ending_from_json(info.raw, file);
  const auto rw = info.raw.find("overwrite_image_reader_writer");
  info.reorient_to_ras = rw != info.raw.end() && rw->is_string() && rw->get<std::string>() == kReorientingReader;
  return info;
}

std::string file_ending_from_json(const ordered_json& j, const std::string& file, const std::string& fallback) {
  if (!j.is_object() || !j.contains("file_ending")) return fallback;
  MEDSEG_CHECK_FILE(j.at("file_ending").is_string(), file, "'file_ending' must be a string (e.g. \".nii.gz\")");
  const std::string ending = j.at("file_ending").get<std::string>();
  check_file_ending(ending, file);
  return ending;
}

namespace {

std::vector<CaseFiles> collect(const std::map<std::string, std::map<int, std::string>>& scanned,
                               const std::string& folder, const std::string& ending, int n) {
  std::vector<CaseFiles> out;
  for (const auto& [id, chans] : scanned) {
    check_path_component(id, "case id", chans.begin()->second);
    CaseFiles c{id, {}, ""};
    const bool dicom = fs::is_directory(chans.begin()->second);  // a DICOM case folder (image_folder.h)
    if (!dicom && multi_channel_ending(ending) && image_io_available()) {
      c.images = files_holding_channels(id, chans, folder, ending, n, "dataset.json declares");
      out.push_back(std::move(c));
      continue;
    }
    for (int k = 0; k < n; ++k) {
      auto it = chans.find(k);
      MEDSEG_CHECK_FILE(it != chans.end(),
                        dicom ? dicom_channel_folder(folder, id, k) : channel_file(folder, id, k, ending),
                        "missing channel ", k, " of case '", id, "'");
      c.images.push_back(it->second);
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::vector<CaseFiles> list_image_cases(const std::string& folder, const std::string& ending, int n) {
  MEDSEG_CHECK_FILE(fs::is_directory(folder), folder, "image folder not found");
  const ImageFolderScan scan = scan_image_folder(folder, ending, n == 1);
  MEDSEG_CHECK(scan.problems.empty(), scan.problems[0]);
  if (scan.cases.empty() && !scan.stray.empty()) {
    // A file_ending that does not match the files (".nii.gz" in dataset.json, .nii on disk) is the
    // usual cause: say what was expected and what is there.
    std::string found;
    for (std::size_t i = 0; i < scan.stray.size() && i < 3; ++i)
      found += (i ? ", " : "") + fs::path(scan.stray[i]).filename().string();
    if (scan.stray.size() > 3) found += concat(", ... (", scan.stray.size(), " entries)");
    throw FileError(folder, "no CASE_XXXX" + ending + " images (file_ending is '" + ending +
                                "') and no DICOM series folders, found: " + found);
  }
  return collect(scan.cases, folder, ending, n);
}

std::vector<CaseFiles> list_training_cases(const DatasetInfo& info) {
  const fs::path root(info.folder);
  std::vector<CaseFiles> out;
  if (info.raw.contains("dataset")) {
    const std::string file = (root / "dataset.json").string();
    for (auto it = info.raw.at("dataset").begin(); it != info.raw.at("dataset").end(); ++it) {
      check_path_component(it.key(), "'dataset' case id", file);  // preprocessing writes <id>.npz & co.
      CaseFiles c{it.key(), {}, ""};
      const ordered_json& e = it.value();
      MEDSEG_CHECK_FILE(e.contains("images") && e.contains("label"), file, "'dataset' entry '", it.key(),
                        "' needs 'images' and 'label'");
      auto resolve = [&](const std::string& p) { return fs::path(p).is_absolute() ? p : (root / p).string(); };
      for (const auto& p : e.at("images")) c.images.push_back(resolve(p.get<std::string>()));
      c.label = resolve(e.at("label").get<std::string>());
      MEDSEG_CHECK_FILE(static_cast<int>(c.images.size()) == info.num_channels(), file, "case '", c.id, "' lists ",
                        c.images.size(), " images but there are ", info.num_channels(), " channels");
      out.push_back(std::move(c));
    }
    std::sort(out.begin(), out.end(), [](const CaseFiles& a, const CaseFiles& b) { return a.id < b.id; });
  } else {
    const std::string images = (root / "imagesTr").string();
    out = list_image_cases(images, info.file_ending, info.num_channels());
    for (auto& c : out) c.label = (root / "labelsTr" / (c.id + info.file_ending)).string();
  }
  for (const auto& c : out) {
    for (const auto& f : c.images) MEDSEG_CHECK_FILE(fs::exists(f), f, "image file of case '", c.id, "' not found");
    MEDSEG_CHECK_FILE(fs::exists(c.label), c.label, "label file of case '", c.id, "' not found");
  }
  return out;
}

}  // namespace medseg::io
