#include "sharing/model_export.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "checkpoint/container.h"
#include "core/error.h"
#include "core/path_overlap.h"
#include "core/json_io.h"
#include "core/log.h"
#include "core/path_component.h"
#include "core/staged_file.h"
#include "core/strings.h"
#include "inference/model_folder.h"
#include "sharing/model_files.h"
#include "core/zip_archive.h"

namespace fs = std::filesystem;

namespace medseg::sharing {

namespace {

// fold_K folders to export: the requested ones (each must exist), else every one present.
std::vector<std::string> resolve_folds(const fs::path& folder, const std::vector<std::string>& requested) {
  std::vector<std::string> folds;
  if (requested.empty()) {
    folds = inference::available_folds(folder.string());
    if (fs::is_directory(folder / "fold_all")) folds.push_back("all");
    MEDSEG_CHECK_FILE(!folds.empty(), folder.string(), "no fold_K folders: nothing to export");
    return folds;
  }
  for (const std::string& f : requested) {
    const std::string fold = parse_fold(f);
    MEDSEG_CHECK_FILE(fs::is_directory(folder / ("fold_" + fold)), (folder / ("fold_" + fold)).string(),
                      "fold folder not found (-f ", f, ")");
    if (std::find(folds.begin(), folds.end(), fold) == folds.end()) folds.push_back(fold);
  }
  return folds;
}

std::vector<std::string> resolve_checkpoints(const std::vector<std::string>& requested) {
  std::vector<std::string> files;
  for (const std::string& c : requested.empty() ? std::vector<std::string>{"checkpoint_final"} : requested) {
    const std::string file = inference::checkpoint_file_name(c);
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  return files;
}

// The absolute, normalised folder and its "DatasetXXX_Name/Trainer__Plans__Config" name in the zip.
std::pair<fs::path, std::string> model_folder_and_name(const std::string& model_folder) {
  fs::path folder = fs::absolute(model_folder).lexically_normal();
  if (folder.filename().empty()) folder = folder.parent_path();
  MEDSEG_CHECK_FILE(fs::is_directory(folder), model_folder, "model folder not found");
  const std::string name = folder.parent_path().filename().string() + "/" + folder.filename().string();
  const std::string problem = model_folder_name_problem(name);
  MEDSEG_CHECK_FILE(problem.empty(), model_folder, "cannot be exported: its path ", problem,
                    " (as under MEDSEG_RESULTS)");
  return {folder, name};
}

bool starts_like_a_zip(const std::string& path) {
  std::string head(4, '\0');
  std::ifstream(path, std::ios::binary).read(head.data(), 4);
  return head == std::string("PK\x03\x04", 4) || head == std::string("PK\x05\x06", 4);  // entries, or none
}

// -o is a new file, or with --overwrite a zip written before: never a file of the model folder being
// exported (its checkpoints), never a folder, never another kind of file.
void check_output(const std::string& output, const fs::path& folder, bool overwrite) {
  MEDSEG_CHECK_FILE(!is_same_or_inside(output, folder.string()), output, "is inside the model folder being exported (",
                    folder.string(), "); write the zip outside it");
  if (!fs::exists(fs::symlink_status(output))) return;
  MEDSEG_CHECK_FILE(overwrite, output, "already exists; pass --overwrite to replace it");
  MEDSEG_CHECK_FILE(!fs::is_directory(output), output, "is a folder; --overwrite replaces only a zip file");
  MEDSEG_CHECK_FILE(starts_like_a_zip(output), output, "is not a zip file; --overwrite replaces only a zip file");
}

// Whether the model folder holds `rel` as its own regular file. A symbolic link on the way (the file,
// or a folder such as fold_0) is refused, naming it: the export would ship its target, a file from
// outside the model folder. A folder where the file should be is refused too; `flag` says what asked
// for the file ("" for an optional one).
bool present(const fs::path& folder, const std::string& rel, const std::string& flag) {
  fs::path p = folder;
  for (const fs::path& part : fs::path(rel)) {
    p /= part;
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (!fs::exists(st)) return false;
    MEDSEG_CHECK_FILE(!fs::is_symlink(st), p.string(),
                      "is a symbolic link; an export takes only the model folder's own files (copy the "
                      "file in, or leave it out)");
  }
  MEDSEG_CHECK_FILE(!fs::is_directory(fs::symlink_status(p)), p.string(), "is a folder where a file belongs",
                    (flag.empty() ? "" : " (" + flag + ")"));
  MEDSEG_CHECK_FILE(fs::is_regular_file(fs::symlink_status(p)), p.string(), "is not a regular file");
  return true;
}

// What the installer checks of every file (a checkpoint's container, a JSON file's syntax), checked
// before the file is shared: a damaged file fails here, naming it, not on the other machine.
void check_content(const std::string& path) {
  if (ends_with(path, ".ckpt")) checkpoint::read_archive(path);
  if (ends_with(path, ".json")) read_json(path);
}

}  // namespace

std::vector<std::string> export_file_list(const std::string& model_folder, const std::vector<std::string>& folds,
                                          const std::vector<std::string>& checkpoint_files) {
  const fs::path folder(model_folder);
  std::vector<std::string> files;
  const auto optional = [&](const std::string& rel) {
    if (present(folder, rel, "")) files.push_back(rel);
  };
  for (const char* required : kRequiredModelFiles) {
    MEDSEG_CHECK_FILE(present(folder, required, "a model folder to export needs it"), (folder / required).string(),
                      "not found (a model folder to export needs it)");
    files.push_back(required);
  }
  for (const char* f : kOptionalModelFiles) optional(f);
  const std::string crossval = crossval_folder_name(folds);
  for (const char* f : kCrossvalFiles) optional(crossval + "/" + f);
  for (const std::string& fold : folds) {
    const std::string ff = "fold_" + fold + "/";
    for (const std::string& ck : checkpoint_files) {
      const std::string flag = "-chk " + ck.substr(0, ck.size() - 5);
      MEDSEG_CHECK_FILE(present(folder, ff + ck, flag), (folder / (ff + ck)).string(), "checkpoint not found (", flag,
                        ")");
      files.push_back(ff + ck);
    }
    for (const char* f : kOptionalFoldFiles) optional(ff + f);
  }
  return files;
}

Manifest export_model_zip(const ExportOptions& o) {
  MEDSEG_CHECK(!o.output.empty(), "no output zip file given (-o)");
  const auto [folder, name] = model_folder_and_name(o.model_folder);
  check_output(o.output, folder, o.overwrite);
  Manifest m;
  m.medseg_version = medseg_version();
  m.model_folder = name;
  m.folds = resolve_folds(folder, o.folds);
  m.checkpoints = resolve_checkpoints(o.checkpoints);
  const std::vector<std::string> files = export_file_list(folder.string(), m.folds, m.checkpoints);
  for (const std::string& rel : files) {
    const std::string path = (folder / rel).string();
    check_content(path);  // never share a damaged file
    const Crc32Digest d = crc32_digest_file(path);
    m.files.push_back({name + "/" + rel, d.size, d.crc32});
  }

  // Built in a staging folder beside the output, libzip's own temporary file included, so that a
  // failure, Ctrl-C or SIGTERM leaves neither OUT.zip nor OUT.zip.XXXXXX.
  StagedFile out(o.output);
  ZipWriter zip(out.path(), false);
  for (std::size_t i = 0; i < files.size(); ++i)
    zip.add_file(m.files[i].path, (folder / files[i]).string(), !ends_with(files[i], ".ckpt"));
  zip.add_bytes(kManifestName, manifest_to_json(m).dump(2) + "\n");
  zip.commit();
  out.commit(o.overwrite);
  spdlog::info("exported {} ({} file(s), fold(s) {}) to {}", name, m.files.size(), nlohmann::json(m.folds).dump(),
               o.output);
  return m;
}

}  // namespace medseg::sharing
