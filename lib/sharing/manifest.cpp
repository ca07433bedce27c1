#include "sharing/manifest.h"

#include <set>

#include "core/error.h"
#include "core/json_object_reader.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core/zip_archive.h"

#ifndef MEDSEG_VERSION
#define MEDSEG_VERSION "unknown"
#endif

namespace medseg::sharing {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

uint32_t parse_crc(const std::string& hex, const std::string& what, const std::string& source) {
  const bool ok = hex.size() == 8 && hex.find_first_not_of("0123456789abcdef") == std::string::npos;
  MEDSEG_CHECK_FILE(ok, source, what, ": '", printable(hex), "' is not 8 lowercase hex digits");
  return static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
}

ManifestFile file_from_json(const json& j, const std::string& what, const std::string& source,
                            const std::string& folder) {
  MEDSEG_CHECK_FILE(j.is_object(), source, what, ": not an object");
  ManifestFile f;
  f.path = json_as<std::string>(j.value("path", json()), what + ".path", source);
  f.size = json_as<uint64_t>(j.value("size", json()), what + ".size", source);
  f.crc32 = parse_crc(json_as<std::string>(j.value("crc32", json()), what + ".crc32", source), what + ".crc32", source);
  const std::string problem = entry_name_problem(f.path);
  MEDSEG_CHECK_FILE(problem.empty(), source, what, ".path '", printable(f.path), "' ", problem);
  MEDSEG_CHECK_FILE(f.path.back() != '/' && f.path.rfind(folder + "/", 0) == 0, source, what, ".path '",
                    printable(f.path), "' is not a file inside the model folder ", folder);
  return f;
}

}  // namespace

std::string medseg_version() { return MEDSEG_VERSION; }

std::string entry_name_problem(const std::string& name) {
  if (name.empty()) return "has an empty name";
  if (name.front() == '/' || name.front() == '\\' || (name.size() > 1 && name[1] == ':'))
    return "is an absolute path (a zip must hold relative paths)";
  std::vector<std::string> parts = split(name, '/');
  if (parts.size() > 1 && parts.back().empty()) parts.pop_back();  // a directory entry
  for (const std::string& p : parts) {
    if (p == "..") return "climbs out of the destination ('..')";
    const std::string why = path_component_problem(p);
    if (!why.empty()) return "is not a plain relative path (" + why + ")";
  }
  return "";
}

std::string model_folder_name_problem(const std::string& name) {
  const std::vector<std::string> parts = split(name, '/');
  if (parts.size() != 2 || !entry_name_problem(name).empty())
    return "is not of the form DatasetXXX_Name/Trainer__Plans__Configuration";
  if (dataset_id_of(parts[0]) < 0) return "does not start with a DatasetXXX_Name folder";
  const auto first = parts[1].find("__");
  const auto second = first == std::string::npos ? first : parts[1].find("__", first + 2);
  if (second == std::string::npos || first == 0 || second == first + 2 || second + 2 >= parts[1].size())
    return "does not end with a Trainer__Plans__Configuration folder";
  return "";
}

json manifest_to_json(const Manifest& m) {
  json files = json::array();
  for (const ManifestFile& f : m.files)
    files.push_back({{"path", f.path}, {"size", f.size}, {"crc32", crc32_hex(f.crc32)}});
  return {{"format", kManifestFormat},
          {"format_version", m.format_version},
          {"medseg_version", m.medseg_version},
          {"model_folder", m.model_folder},
          {"folds", m.folds},
          {"checkpoints", m.checkpoints},
          {"files", files}};
}

Manifest manifest_from_json(const json& j, const std::string& source) {
  MEDSEG_CHECK_FILE(j.is_object(), source, "not a model zip manifest (expected a JSON object)");
  MEDSEG_CHECK_FILE(j.value("format", json()) == kManifestFormat, source, "key 'format' is not \"", kManifestFormat,
                    "\": not a model zip manifest");
  Manifest m;
  m.format_version = json_as<int>(j.value("format_version", json()), "key 'format_version'", source);
  MEDSEG_CHECK_FILE(m.format_version >= 1 && m.format_version <= kManifestFormatVersion, source, "format version ",
                    m.format_version, " is not one this medseg reads (1..", kManifestFormatVersion, "); update medseg");
  m.medseg_version =
      j.contains("medseg_version") ? json_as<std::string>(j["medseg_version"], "key 'medseg_version'", source) : "";
  m.model_folder = json_as<std::string>(j.value("model_folder", json()), "key 'model_folder'", source);
  const std::string problem = model_folder_name_problem(m.model_folder);
  MEDSEG_CHECK_FILE(problem.empty(), source, "model_folder '", printable(m.model_folder), "' ", problem);
  if (j.contains("folds")) m.folds = json_as<std::vector<std::string>>(j["folds"], "key 'folds'", source);
  if (j.contains("checkpoints"))
    m.checkpoints = json_as<std::vector<std::string>>(j["checkpoints"], "key 'checkpoints'", source);
  const json& files = j.contains("files") ? j["files"] : json();
  MEDSEG_CHECK_FILE(files.is_array() && !files.empty(), source, "key 'files' must be a non-empty list");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < files.size(); ++i) {
    m.files.push_back(file_from_json(files[i], concat("files[", i, "]"), source, m.model_folder));
    MEDSEG_CHECK_FILE(seen.insert(m.files.back().path).second, source, "files[", i, "]: '", m.files.back().path,
                      "' is listed twice");
  }
  return m;
}

}  // namespace medseg::sharing
