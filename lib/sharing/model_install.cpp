#include "sharing/model_install.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "checkpoint/container.h"
#include "core/atomic_writer.h"
#include "core/disk_space.h"
#include "core/error.h"
#include "core/path_overlap.h"
#include "core/json_io.h"
#include "core/log.h"
#include "core/output_folder.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core/strings.h"
#include "sharing/model_files.h"
#include "sharing/nnunet_import.h"
#include "core/zip_archive.h"

namespace fs = std::filesystem;

namespace medseg::sharing {

namespace {

constexpr uint64_t kMaxManifestBytes = 64ull << 20;

std::string entry(const std::string& name) { return "entry '" + printable(name) + "'"; }

// Every entry name is safe and appears once; returns the file entries by name.
std::map<std::string, ZipEntry> checked_entries(const ZipReader& z) {
  std::map<std::string, ZipEntry> files;
  std::map<std::string, int> seen;
  for (const ZipEntry& e : z.entries()) {
    const std::string problem = entry_name_problem(e.name);
    MEDSEG_CHECK_FILE(problem.empty(), z.path(), entry(e.name), " ", problem, "; nothing was installed");
    MEDSEG_CHECK_FILE(!seen[e.name]++, z.path(), entry(e.name), " appears twice; nothing was installed");
    if (!e.directory) files.emplace(e.name, e);
  }
  return files;
}

Manifest read_manifest(const ZipReader& z, const std::map<std::string, ZipEntry>& files) {
  const auto it = files.find(kManifestName);
  MEDSEG_CHECK_FILE(it != files.end(), z.path(), "no ", kManifestName,
                    " manifest: not a model zip written by medseg_export_model_zip; nothing was installed");
  const std::string text = z.read(it->second, kMaxManifestBytes);
  const std::string source = z.path() + " (" + kManifestName + ")";
  return manifest_from_json(parse_json_text<json>(text, source), source);
}

// An entry's size against what its file can be (`rel`: its path in the model folder): a side file is
// small (max_model_file_bytes), and a checkpoint, float weights that barely deflate, inflates at most
// kMaxCheckpointInflation-fold; more is a zip bomb.
void check_entry_size(const ZipReader& z, const ZipEntry& e, const std::string& rel, bool checkpoint) {
  MEDSEG_CHECK_FILE(checkpoint || e.size <= max_model_file_bytes(rel), z.path(), entry(e.name), " would inflate to ",
                    byte_size_text(e.size), ", more than such a file holds (",
                    byte_size_text(max_model_file_bytes(rel)), "); nothing was installed");
  MEDSEG_CHECK_FILE(!checkpoint || e.size / kMaxCheckpointInflation <= e.compressed_size, z.path(), entry(e.name),
                    " would inflate ", e.size / std::max<uint64_t>(e.compressed_size, 1), "-fold (",
                    byte_size_text(e.compressed_size), " to ", byte_size_text(e.size),
                    "), which no checkpoint does: a zip bomb; nothing was installed");
}

// A file the manifest lists: one a model folder holds (model_files.h), of a plausible size.
void check_listed_file(const ZipReader& z, const ZipEntry& e, const Manifest& m) {
  const std::string rel = e.name.substr(m.model_folder.size() + 1);
  const std::string problem = model_file_problem(rel, m.folds, m.checkpoints);
  MEDSEG_CHECK_FILE(problem.empty(), z.path(), entry(e.name), " ", problem, "; nothing was installed");
  check_entry_size(z, e, rel, ends_with(rel, ".ckpt"));
}

// The zip holds exactly the manifest's files, with the sizes it records.
void check_against_manifest(const ZipReader& z, const std::map<std::string, ZipEntry>& files, const Manifest& m) {
  std::map<std::string, const ManifestFile*> listed;
  for (const ManifestFile& f : m.files) listed[f.path] = &f;
  for (const auto& [name, e] : files)
    MEDSEG_CHECK_FILE(name == kManifestName || listed.count(name), z.path(), entry(name),
                      " is not listed in the manifest; nothing was installed");
  for (const ManifestFile& f : m.files) {
    const auto it = files.find(f.path);
    MEDSEG_CHECK_FILE(it != files.end(), z.path(), entry(f.path),
                      " is listed in the manifest but missing; nothing was installed");
    MEDSEG_CHECK_FILE(it->second.size == f.size, z.path(), entry(f.path), " holds ", it->second.size,
                      " bytes but the manifest says ", f.size, ": the zip is damaged; nothing was installed");
    check_listed_file(z, it->second, m);
  }
}

uint64_t total_bytes(const Manifest& m) {
  uint64_t total = 0;
  for (const ManifestFile& f : m.files) total = f.size > UINT64_MAX - total ? UINT64_MAX : total + f.size;
  return total;
}

// A checkpoint or JSON file that does not read back as one, as an error about the zip's entry.
void check_content(const std::string& file, const std::string& name, const std::string& zip_path) {
  try {
    if (ends_with(name, ".ckpt")) checkpoint::read_archive(file);
    if (ends_with(name, ".json")) read_json(file);
  } catch (const FileError& e) {
    std::string problem = e.what();
    if (problem.rfind(e.path() + ": ", 0) == 0) problem = problem.substr(e.path().size() + 2);
    throw FileError(zip_path, entry(name) + ": " + problem + "; nothing was installed");
  }
}

void extract_all(const ZipReader& z, const std::map<std::string, ZipEntry>& files, const Manifest& m,
                 const std::string& stage) {
  for (const ManifestFile& f : m.files) {
    const fs::path target = fs::path(stage) / f.path.substr(m.model_folder.size() + 1);
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    MEDSEG_CHECK_FILE(!ec, z.path(), entry(f.path), ": cannot be placed (", ec.message(), "); nothing was installed");
    const Crc32Digest d = z.extract(files.at(f.path), target.string());
    MEDSEG_CHECK_FILE(d.size == f.size && d.crc32 == f.crc32, z.path(), entry(f.path),
                      ": checksum mismatch (the manifest says ", f.size, " bytes, crc32 ", crc32_hex(f.crc32),
                      "; the data has ", d.size, " bytes, crc32 ", crc32_hex(d.crc32),
                      "): the zip is damaged; nothing was installed");
    check_content(target.string(), f.path, z.path());
  }
}

// The model folders of a zip written by nnU-Net's nnUNetv2_export_model_to_zip (no manifest, checkpoints as
// <Dataset>/<Trainer__Plans__Config>/fold_K/checkpoint_final.pth): "Dataset.../Trainer__Plans__Config" each.
std::set<std::string> nnunet_model_folders(const std::map<std::string, ZipEntry>& files) {
  static const std::regex pth("^(Dataset\\d{3}_[^/]+/[^/]+__[^/]+__[^/]+)/fold_[^/]+/checkpoint_final\\.pth$");
  std::set<std::string> out;
  for (const auto& [name, e] : files) {
    std::smatch m;
    if (std::regex_match(name, m, pth)) out.insert(m[1].str());
  }
  return out;
}

// `e`'s message with the scratch folder's path given as the zip's entry it was extracted from: the scratch
// folder is gone by the time the user reads it.
[[noreturn]] void rethrow_as_entry(const std::exception& e, const std::string& scratch,
                                   const std::string& entry_prefix) {
  std::string msg = e.what();
  for (size_t at = msg.find(scratch); at != std::string::npos; at = msg.find(scratch, at + entry_prefix.size()))
    msg.replace(at, scratch.size(), entry_prefix);
  throw Error(msg + "; nothing was installed");
}

// One model folder of an nnU-Net zip, converted into `stage`: its JSON files and fold_K/checkpoint_final.pth
// are extracted to a scratch folder beside the destination (removed on the way out) and converted there by
// medseg_import_nnunet's reader (no Python, no code from the zip runs); the rest (progress pictures, debug
// files, pickles) stays in the zip.
void convert_nnunet_model(const ZipReader& z, const std::map<std::string, ZipEntry>& files, const std::string& model,
                          const fs::path& dest, const std::string& stage) {
  StagedFolder scratch(dest.string() + ".nnunet-zip");  // never committed
  uint64_t bytes = 0;
  std::vector<const ZipEntry*> take;
  static const std::regex wanted(
      "^(plans\\.json|dataset\\.json|dataset_fingerprint\\.json|fold_[^/]+/checkpoint_final\\.pth)$");
  for (const auto& [name, e] : files)
    if (name.rfind(model + "/", 0) == 0 && std::regex_match(name.substr(model.size() + 1), wanted)) {
      take.push_back(&e);
      bytes += e.size;
    }
  check_free_space(dest.parent_path().string(), 2 * bytes, "the nnU-Net model " + model + " of " + z.path());
  for (const ZipEntry* e : take) {
    const std::string rel = e->name.substr(model.size() + 1);
    check_entry_size(z, *e, rel, ends_with(rel, ".pth"));
    const fs::path target = fs::path(scratch.path()) / rel;
    fs::create_directories(target.parent_path());
    z.extract(*e, target.string());
  }
  NnunetImportOptions o;
  o.nnunet_folder = scratch.path();
  try {
    import_nnunet_into(o, stage);
  } catch (const std::exception& e) { rethrow_as_entry(e, scratch.path(), z.path() + ":" + model); }
}

// An nnU-Net zip (nnUNetv2_export_model_to_zip) may hold several model folders: each is converted into its
// own staged folder, and they are moved into place only when every one converted, so that a hostile second
// model leaves no first one behind.
InstallResult install_nnunet_zip(const ZipReader& z, const std::map<std::string, ZipEntry>& files,
                                 const std::set<std::string>& models, const std::string& results_root, bool overwrite) {
  InstallResult r;
  std::vector<std::unique_ptr<NewFolderGuard>> dataset_folders;
  std::vector<std::unique_ptr<StagedFolder>> staged;
  for (const std::string& model : models) {
    const fs::path dest = fs::path(results_root) / model;
    refuse_taken_dataset_id(results_root, dest.parent_path().filename().string(),
                            "nothing was installed; install into another results root (-o), or rename one of them");
    check_output_apart(dest.string(), z.path(), "model zip being installed");
    MEDSEG_CHECK_FILE(!fs::exists(fs::symlink_status(dest)) || overwrite, dest.string(),
                      "already exists; pass --overwrite to replace it (nothing was installed)");
    // The dataset folder first, so that the staged folders' guards never own it; it goes again only if this
    // install fails.
    dataset_folders.push_back(std::make_unique<NewFolderGuard>(dest.parent_path().string()));
    staged.push_back(std::make_unique<StagedFolder>(dest.string()));
    convert_nnunet_model(z, files, model, dest, staged.back()->path());
  }
  for (auto& s : staged) s->commit(overwrite);
  for (auto& g : dataset_folders) g->keep();
  for (const std::string& model : models) {
    r.model_folder = (fs::path(results_root) / model).string();
    r.manifest.model_folder = model;
    spdlog::info("installed {} from nnU-Net's zip {} (converted without Python)", r.model_folder, z.path());
  }
  return r;
}

}  // namespace

InstallResult install_model_zip(const std::string& zip_path, const std::string& results_root, bool overwrite) {
  const ZipReader z(zip_path);
  const std::map<std::string, ZipEntry> files = checked_entries(z);
  if (!files.count(kManifestName)) {
    const std::set<std::string> models = nnunet_model_folders(files);
    if (!models.empty()) return install_nnunet_zip(z, files, models, results_root, overwrite);
  }
  InstallResult r;
  r.manifest = read_manifest(z, files);
  check_against_manifest(z, files, r.manifest);

  const fs::path dest = fs::path(results_root) / r.manifest.model_folder;
  r.model_folder = dest.string();
  check_output_apart(r.model_folder, zip_path, "model zip being installed");
  refuse_taken_dataset_id(results_root, dest.parent_path().filename().string(),
                          "nothing was installed; install into another results root (-o), or rename one of them");
  if (fs::exists(fs::symlink_status(dest))) {
    MEDSEG_CHECK_FILE(overwrite, r.model_folder,
                      "already exists; pass --overwrite to replace it (nothing was installed)");
    MEDSEG_CHECK_FILE(fs::is_directory(fs::symlink_status(dest)), r.model_folder,
                      "exists and is not a folder; nothing was installed");
  }
  check_free_space(dest.parent_path().string(), total_bytes(r.manifest),
                   concat("the ", r.manifest.files.size(), " file(s) of ", zip_path));
  StagedFolder stage(r.model_folder);
  extract_all(z, files, r.manifest, stage.path());
  sync_filesystem(stage.path());  // the files are on disk before their folder gets its name
  stage.commit(overwrite);
  sync_filesystem(r.model_folder);  // and so is the rename
  spdlog::info("installed {} ({} file(s), fold(s) {}) from {}", r.model_folder, r.manifest.files.size(),
               json(r.manifest.folds).dump(), zip_path);
  return r;
}

}  // namespace medseg::sharing
