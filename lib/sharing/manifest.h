#pragma once
// The manifest a model zip carries at its root (docs/model_sharing.md): which model folder it
// holds and, for every file, its path, size and CRC32, so that an installer can check the whole zip
// against it before writing anything.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace medseg::sharing {

inline constexpr char kManifestName[] = "medseg_model_zip.json";
inline constexpr char kManifestFormat[] = "medseg-model-zip";
inline constexpr int kManifestFormatVersion = 1;

struct ManifestFile {
  std::string path;  // in the zip, "DatasetXXX_Name/Trainer__Plans__Config/..."
  uint64_t size = 0;
  uint32_t crc32 = 0;
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  std::string medseg_version;
  std::string model_folder;  // "DatasetXXX_Name/Trainer__Plans__Config"
  std::vector<std::string> folds;
  std::vector<std::string> checkpoints;  // file names, "checkpoint_final.ckpt"
  std::vector<ManifestFile> files;
};

// The medseg version this build writes into manifests.
std::string medseg_version();

nlohmann::json manifest_to_json(const Manifest& m);

// Checks everything an installer relies on: the format and its version, a model folder of the form
// DatasetXXX_Name/Trainer__Plans__Config, every file a safe path inside it, listed once. Throws
// FileError(source, "<key>: <problem>").
Manifest manifest_from_json(const nlohmann::json& j, const std::string& source);

// "" when `name` is a safe relative path of a zip entry (components separated by '/', none empty,
// "." or "..", no backslash, no control characters, not absolute), else why not. Directory entries
// end with '/', which is allowed.
std::string entry_name_problem(const std::string& name);

// "" when `name` is "DatasetXXX_Name/Trainer__Plans__Config", else why not.
std::string model_folder_name_problem(const std::string& name);

}  // namespace medseg::sharing
