#include "io/dataset_conversion.h"

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/json_io.h"
#include "core/output_folder.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "io/image_io.h"

namespace fs = std::filesystem;

namespace medseg::io {
namespace {

using ordered_json = nlohmann::ordered_json;

// The .nii.gz files of a folder that are cases (not "._x" copies or hidden files), sorted.
std::vector<std::string> case_files(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n.empty() || n[0] == '.' || n[0] == '_') continue;
    if (n.size() > 7 && n.compare(n.size() - 7, 7, ".nii.gz") == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One MSD image as CASE_0000.nii.gz ... in `to`: each volume of a 4D file, or the 3D file copied.
void split_channels(const fs::path& file, const fs::path& to, std::size_t channels) {
  const std::string stem = file.filename().string().substr(0, file.filename().string().size() - 7);
  const std::vector<Volume> volumes = read_image_volumes(file.string());
  if (volumes.size() != channels)
    throw FileError(file.string(), concat("holds ", volumes.size(), " volume(s) but dataset.json names ", channels,
                                          " modalit", channels == 1 ? "y" : "ies"));
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

// Runs job(i) for i < n on `threads` threads; the first exception is rethrown after all stopped.
template <class F>
void parallel_for(std::size_t n, int threads, F job) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex m;
  auto worker = [&] {
    for (std::size_t i; (i = next++) < n;) {
      try {
        job(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!failure) failure = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

// MSD's / nnU-Net v1's dataset.json in nnU-Net v2's form; `drop` are keys v2 has no use for.
ordered_json nnunet_dataset_json(const fs::path& msd_json, std::initializer_list<const char*> drop) {
  ordered_json j;
  try {
    j = ordered_json::parse(read_file(msd_json.string()));
  } catch (const ordered_json::exception& e) {
    throw FileError(msd_json.string(), std::string("not valid JSON (") + e.what() + ")");
  }
  for (const char* key : {"labels", "modality"})
    if (!j.contains(key) || !j[key].is_object() || j[key].empty())
      throw FileError(msd_json.string(), std::string("has no \"") + key + "\" object (is it an MSD dataset.json?)");
  ordered_json labels = ordered_json::object();
  for (const auto& [value, name] : j["labels"].items()) {
    if (!name.is_string())
      throw FileError(msd_json.string(), "labels: the name of value " + value + " is not a string");
    std::size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(value, &used);
    } catch (const std::exception&) {}
    if (used != value.size() || v < 0)
      throw FileError(msd_json.string(), "labels: key \"" + value + "\" is not a label value");
    if (labels.contains(name.get<std::string>()))
      throw FileError(msd_json.string(), "labels: the name \"" + name.get<std::string>() + "\" is given twice");
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
  if (task_id < 0) throw FileError(source.string(), "not an MSD task folder (its name must be TaskXX_Name)");
  const int id = c.target_id.value_or(task_id);
  MEDSEG_CHECK(id >= 0 && id <= 999, "--overwrite_id: ", id, " is not a dataset id (0 to 999)");
  for (const char* sub : {"imagesTr", "labelsTr", "imagesTs"})
    if (!fs::is_directory(source / sub)) throw FileError((source / sub).string(), "folder missing from the MSD task");
  const fs::path msd_json = source / "dataset.json";
  if (!fs::is_regular_file(msd_json)) throw FileError(msd_json.string(), "missing from the MSD task");
  const ordered_json dataset = nnunet_dataset_json(msd_json, {"training", "test"});
  const std::size_t channels = dataset["channel_names"].size();

  char name[32];
  std::snprintf(name, sizeof name, "Dataset%03d_", id);
  const std::string target_name = name + task.substr(sep + 1);
  refuse_taken_dataset_id(c.raw_root, target_name, "choose another with --overwrite_id");
  const fs::path target = fs::path(c.raw_root) / target_name;
  if (fs::exists(target))
    throw FileError(target.string(), "exists already; remove it or choose another id with --overwrite_id");

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
  parallel_for(jobs.size(), c.threads, [&](std::size_t i) {
    const Job& j = jobs[i];
    if (j.label)
      fs::copy_file(j.file, j.to / j.file.filename());
    else
      split_channels(j.file, j.to, channels);
  });
  write_file_atomic((out / "dataset.json").string(), dataset.dump(4));
  staged.commit(false);
  return target.string();
}

std::string convert_old_nnunet_dataset(const std::string& source_folder, const std::string& raw_root,
                                       const std::string& target_name) {
  check_path_component(target_name, "OUTPUT_DATASET_NAME");
  if (dataset_id_of(target_name) < 0)
    throw Error("OUTPUT_DATASET_NAME '" + target_name + "' must follow the DatasetXXX_Name convention");
  const fs::path source(source_folder);
  for (const char* sub : {"imagesTr", "labelsTr"})
    if (!fs::is_directory(source / sub))
      throw FileError((source / sub).string(), "folder missing from the nnU-Net v1 task");
  const fs::path v1_json = source / "dataset.json";
  if (!fs::is_regular_file(v1_json)) throw FileError(v1_json.string(), "missing from the nnU-Net v1 task");
  const ordered_json dataset = nnunet_dataset_json(v1_json, {"tensorImageSize", "numTest", "training", "test"});
  refuse_taken_dataset_id(raw_root, target_name, "choose another OUTPUT_DATASET_NAME");
  const fs::path target = fs::path(raw_root) / target_name;
  if (fs::exists(target))
    throw FileError(target.string(), "exists already; remove it or choose another OUTPUT_DATASET_NAME");

  StagedFolder staged(target.string());
  for (const char* sub : {"imagesTr", "labelsTr", "imagesTs", "labelsTs", "imagesVal", "labelsVal"})
    if (fs::is_directory(source / sub))
      fs::copy(source / sub, fs::path(staged.path()) / sub, fs::copy_options::recursive);
  write_file_atomic((fs::path(staged.path()) / "dataset.json").string(), dataset.dump(4));
  staged.commit(false);
  return target.string();
}

}  // namespace medseg::io
