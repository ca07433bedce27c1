#include "io/dataset_conversion.h"

#include <algorithm>
#include <initializer_list>
#include <cstdio>
#include <filesystem>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/json_io.h"
#include "core/parallel.h"
#include "core/ordered_json_io.h"
#include "core/output_folder.h"
#include "core/path_component.h"
#include "core/path_overlap.h"
#include "core/paths.h"
#include "io/dataset.h"
#include "io/image_formats.h"
#include "io/image_io.h"

namespace fs = std::filesystem;

namespace medseg::io {
namespace {

using ordered_json = nlohmann::ordered_json;

// A symbolic link in a task would make the conversion copy whatever it points at, a tree outside the task
// included (issue 42): refused, naming it.
void refuse_link(const fs::directory_entry& e) {
  MEDSEG_CHECK_FILE(!e.is_symlink(), e.path().string(),
                    "is a symbolic link; the conversion copies no links (put the file itself there)");
}

// Every entry under `folder`, refusing links (the walk itself follows none).
void refuse_links_under(const fs::path& folder) {
  for (const auto& e : fs::recursive_directory_iterator(folder)) refuse_link(e);
}

// The .nii.gz files of a folder that are cases (not "._x" copies or hidden files), sorted.
std::vector<std::string> case_files(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(folder)) {
    refuse_link(e);
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n.empty() || n[0] == '.' || n[0] == '_') continue;
    if (n.size() > 7 && n.compare(n.size() - 7, 7, ".nii.gz") == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// An MSD label is copied as it is, so it is checked first: a label image (a link to anything else was
// refused already) on the grid of its case's image, which may be 4D (one volume per modality).
void check_label_fits(const fs::path& label, const fs::path& image) {
  const auto l = image_file_shape(label.string());
  MEDSEG_CHECK_FILE(fs::exists(image), label.string(), "has no image of the same name in imagesTr");
  const auto i = image_file_shape(image.string());
  MEDSEG_CHECK_FILE(l == i, label.string(), "has shape ", l[2], " x ", l[1], " x ", l[0], " but its image ",
                    image.string(), " has ", i[2], " x ", i[1], " x ", i[0]);
}

// One MSD image as CASE_0000.nii.gz ... in `to`: each volume of a 4D file, or the 3D file copied.
void split_channels(const fs::path& file, const fs::path& to, std::size_t channels) {
  const std::string stem = file.filename().string().substr(0, file.filename().string().size() - 7);
  const std::vector<Volume> volumes = read_image_volumes(file.string());
  MEDSEG_CHECK_FILE(volumes.size() == channels, file.string(), "holds ", volumes.size(),
                    " volume(s) but dataset.json names ", channels, " modalit", channels == 1 ? "y" : "ies");
  if (volumes.size() == 1) {  // nnU-Net copies a 3D file as it is
    fs::copy_file(file, to / (stem + "_0000.nii.gz"));
    return;
  }
  for (std::size_t c = 0; c < volumes.size(); ++c) {
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, "_%04zu.nii.gz", c);
    write_image((to / (stem + suffix)).string(), volumes[c]);
  }
}

// MSD's / nnU-Net v1's dataset.json in nnU-Net v2's form; `drop` are keys v2 has no use for.
ordered_json nnunet_dataset_json(const fs::path& msd_json, std::initializer_list<const char*> drop) {
  ordered_json j = read_ordered_json(msd_json.string());
  for (const char* key : {"labels", "modality"})
    MEDSEG_CHECK_FILE(j.contains(key) && j[key].is_object() && !j[key].empty(), msd_json.string(), "has no \"", key,
                      "\" object (is it an MSD dataset.json?)");
  MEDSEG_CHECK_FILE(j["labels"].size() <= kMaxLabels, msd_json.string(), "\"labels\" has ", j["labels"].size(),
                    " entries; medseg reads up to ", kMaxLabels, " (nnU-Net stores segmentations as int16)");
  ordered_json labels = ordered_json::object();
  std::set<std::string> names;
  for (const auto& [value, name] : j["labels"].items()) {
    MEDSEG_CHECK_FILE(name.is_string(), msd_json.string(), "labels: the name of value ", value, " is not a string");
    std::size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(value, &used);
    } catch (const std::exception&) {}
    MEDSEG_CHECK_FILE(used == value.size() && v >= 0, msd_json.string(), "labels: key \"", value,
                      "\" is not a label value");
    MEDSEG_CHECK_FILE(names.insert(name.get<std::string>()).second, msd_json.string(), "labels: the name \"",
                      name.get<std::string>(), "\" is given twice");
    labels[name.get<std::string>()] = v;
  }
  ordered_json out = ordered_json::object();
  for (auto& [key, value] : j.items()) {
    const std::string name = key;  // C++17 lambdas cannot capture a structured binding (clang)
    if (std::any_of(drop.begin(), drop.end(), [&](const char* d) { return name == d; })) continue;
    if (key == "labels")
      out["labels"] = labels;
    else if (key == "modality")
      out["channel_names"] = value;
    else
      out[key] = value;
  }
  out["file_ending"] = ".nii.gz";
  return out;
}

}  // namespace

std::string convert_msd_dataset(const MsdConversion& c) {
  const fs::path src = fs::path(c.source).lexically_normal();
  const fs::path source = src.filename().empty() ? src.parent_path() : src;
  const std::string task = source.filename().string();
  const auto sep = task.find('_');
  int task_id = -1;
  if (task.rfind("Task", 0) == 0 && sep != std::string::npos && sep > 4 && sep + 1 < task.size()) {
    try {
      std::size_t used = 0;
      task_id = std::stoi(task.substr(4, sep - 4), &used);
      if (used != sep - 4) task_id = -1;
    } catch (const std::exception&) {}
  }
  MEDSEG_CHECK_FILE(task_id >= 0, source.string(), "not an MSD task folder (its name must be TaskXX_Name)");
  const int id = c.target_id.value_or(task_id);
  MEDSEG_CHECK(id >= 0 && id <= 999, "--overwrite_id: ", id, " is not a dataset id (0 to 999)");
  for (const char* sub : {"imagesTr", "labelsTr", "imagesTs"})
    MEDSEG_CHECK_FILE(fs::is_directory(source / sub), (source / sub).string(), "folder missing from the MSD task");
  const fs::path msd_json = source / "dataset.json";
  MEDSEG_CHECK_FILE(fs::is_regular_file(msd_json), msd_json.string(), "missing from the MSD task");
  const ordered_json dataset = nnunet_dataset_json(msd_json, {"training", "test"});
  const std::size_t channels = dataset["channel_names"].size();

  char name[32];
  std::snprintf(name, sizeof name, "Dataset%03d_", id);
  const std::string target_name = name + task.substr(sep + 1);
  refuse_taken_dataset_id(c.raw_root, target_name, "choose another with --overwrite_id");
  const fs::path target = fs::path(c.raw_root) / target_name;
  MEDSEG_CHECK_FILE(!fs::exists(target), target.string(),
                    "exists already; remove it or choose another id with --overwrite_id");
  check_output_apart(target.string(), source.string(), "MSD task folder");

  StagedFolder staged(target.string());
  const fs::path out(staged.path());
  struct Job {
    fs::path file, to;
    bool label;
  };
  std::vector<Job> jobs;
  for (const auto& [sub, label] : {std::pair{"imagesTr", false}, {"imagesTs", false}, {"labelsTr", true}}) {
    fs::create_directories(out / sub);
    for (const auto& f : case_files(source / sub)) jobs.push_back({source / sub / f, out / sub, label});
  }
  parallel_for(static_cast<int64_t>(jobs.size()), c.threads, [&](int64_t i) {
    const Job& j = jobs[static_cast<std::size_t>(i)];
    if (j.label) {
      check_label_fits(j.file, source / "imagesTr" / j.file.filename());
      fs::copy_file(j.file, j.to / j.file.filename());
    } else {
      split_channels(j.file, j.to, channels);
    }
  });
  write_file_atomic((out / "dataset.json").string(), dataset.dump(4));
  staged.commit(false);
  return target.string();
}

std::string convert_old_nnunet_dataset(const std::string& source_folder, const std::string& raw_root,
                                       const std::string& target_name) {
  check_path_component(target_name, "OUTPUT_DATASET_NAME");
  MEDSEG_CHECK(dataset_id_of(target_name) >= 0, "OUTPUT_DATASET_NAME '", target_name,
               "' must follow the DatasetXXX_Name convention");
  const fs::path source(source_folder);
  for (const char* sub : {"imagesTr", "labelsTr"})
    MEDSEG_CHECK_FILE(fs::is_directory(source / sub), (source / sub).string(),
                      "folder missing from the nnU-Net v1 task");
  const fs::path v1_json = source / "dataset.json";
  MEDSEG_CHECK_FILE(fs::is_regular_file(v1_json), v1_json.string(), "missing from the nnU-Net v1 task");
  const ordered_json dataset = nnunet_dataset_json(v1_json, {"tensorImageSize", "numTest", "training", "test"});
  refuse_taken_dataset_id(raw_root, target_name, "choose another OUTPUT_DATASET_NAME");
  const fs::path target = fs::path(raw_root) / target_name;
  MEDSEG_CHECK_FILE(!fs::exists(target), target.string(),
                    "exists already; remove it or choose another OUTPUT_DATASET_NAME");
  check_output_apart(target.string(), source.string(), "nnU-Net v1 task folder");

  for (const char* sub : {"imagesTr", "labelsTr", "imagesTs", "labelsTs", "imagesVal", "labelsVal"})
    if (fs::is_directory(source / sub)) refuse_links_under(source / sub);
  StagedFolder staged(target.string());
  for (const char* sub : {"imagesTr", "labelsTr", "imagesTs", "labelsTs", "imagesVal", "labelsVal"})
    if (fs::is_directory(source / sub))
      fs::copy(source / sub, fs::path(staged.path()) / sub, fs::copy_options::recursive);
  write_file_atomic((fs::path(staged.path()) / "dataset.json").string(), dataset.dump(4));
  staged.commit(false);
  return target.string();
}

}  // namespace medseg::io
