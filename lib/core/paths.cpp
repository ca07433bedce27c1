#include "core/paths.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg {

std::string root_folder(Root which, const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* names[3][2] = {{"MEDSEG_RAW", "nnUNet_raw"},
                             {"MEDSEG_PREPROCESSED", "nnUNet_preprocessed"},
                             {"MEDSEG_RESULTS", "nnUNet_results"}};
  const auto& n = names[static_cast<int>(which)];
  for (const char* var : n) {
    const char* v = std::getenv(var);
    if (v && *v) return v;
  }
  throw Error(
      concat("environment variable ", n[0], " is not set (nor ", n[1], "); set it or pass the folder explicitly"));
}

int dataset_id_of(const std::string& name) {
  static const std::regex re(R"(^Dataset(\d{3})_.+$)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return -1;
  return std::stoi(m[1].str());
}

std::vector<std::string> list_datasets(const std::string& root) {
  std::vector<std::string> out;
  if (!fs::is_directory(root)) return out;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && dataset_id_of(e.path().filename().string()) >= 0)
      out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void refuse_taken_dataset_id(const std::string& root, const std::string& folder_name, const std::string& hint) {
  const int id = dataset_id_of(folder_name);
  if (id < 0) return;
  for (const std::string& other : list_datasets(root))
    MEDSEG_CHECK_FILE(dataset_id_of(other) != id || other == folder_name, (fs::path(root) / other).string(),
                      "dataset id ", id, " is taken by this folder; ", folder_name, " beside it would make -d ", id,
                      " ambiguous (", hint, ")");
}

std::string find_dataset_name(const std::string& root, const std::string& key) {
  MEDSEG_CHECK_FILE(fs::is_directory(root), root, "dataset root folder does not exist");
  const auto all = list_datasets(root);
  std::vector<std::string> hits;
  const bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
  for (const auto& d : all) {
    if (d == key) return d;
    if (numeric && dataset_id_of(d) == std::stoi(key)) hits.push_back(d);
    if (!numeric && d.substr(d.find('_') + 1) == key) hits.push_back(d);
  }
  if (hits.size() == 1) return hits[0];
  std::string listing;
  for (const auto& d : (hits.empty() ? all : hits)) listing += (listing.empty() ? "" : ", ") + d;
  MEDSEG_CHECK(
      !hits.empty(), "dataset '", key, "' not found under ", root,
      all.empty() ? std::string(" (no DatasetXXX_Name folders there)") : concat(" (available: ", listing, ")"));
  throw Error(concat("dataset '", key, "' is ambiguous under ", root, ": ", listing));
}

std::vector<std::string> numbered_folds(const std::string& folder, const std::string& containing) {
  std::vector<int> numeric;
  if (fs::is_directory(folder)) {
    for (const auto& e : fs::directory_iterator(folder)) {
      const std::string n = e.path().filename().string();
      if (!e.is_directory() || n.rfind("fold_", 0) != 0) continue;
      if (!containing.empty() && !fs::is_directory(e.path() / containing)) continue;
      const std::string k = n.substr(5);
      if (!k.empty() && std::all_of(k.begin(), k.end(), ::isdigit)) numeric.push_back(std::stoi(k));
    }
  }
  std::sort(numeric.begin(), numeric.end());
  std::vector<std::string> out;
  for (int k : numeric) out.push_back(std::to_string(k));
  return out;
}

}  // namespace medseg
