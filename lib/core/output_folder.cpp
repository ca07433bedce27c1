#include "core/output_folder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/staging_names.h"

namespace fs = std::filesystem;

namespace medseg {

namespace {

// The topmost of `folder` and its ancestors that does not exist ("" when `folder` exists).
fs::path first_missing(const fs::path& folder) {
  fs::path missing;
  for (fs::path p = fs::absolute(folder).lexically_normal(); !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (fs::exists(p, ec) || ec) break;
    missing = p;
    if (p == p.parent_path()) break;
  }
  return missing;
}

// "a/b/" -> "a/b", "b" -> "./b": a path whose parent_path() and filename() name the folder.
fs::path folder_path(const std::string& folder) {
  fs::path p = fs::path(folder).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.has_parent_path() ? p : fs::path(".") / p;
}

}  // namespace

NewFolderGuard::NewFolderGuard(const std::string& folder, bool only_if_empty) : only_if_empty_(only_if_empty) {
  if (folder.empty()) return;
  fs::path normal = fs::absolute(folder).lexically_normal();
  folder_ = (normal.filename().empty() ? normal.parent_path() : normal).string();
  const fs::path missing = first_missing(folder);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    if (!missing.empty()) fs::remove_all(missing, ec);
    throw FileError(folder, concat("cannot create the folder: ", ec.message()));
  }
  created_ = missing.string();
  if (created_.empty()) return;
  on_signal_ = only_if_empty_ ? RemoveOnSignal::empty_folders(folder_, created_) : RemoveOnSignal::tree(created_);
}

void NewFolderGuard::keep() {
  created_.clear();
  on_signal_.release();
}

NewFolderGuard::~NewFolderGuard() {
  on_signal_.release();
  std::error_code ec;
  if (created_.empty()) return;
  if (!only_if_empty_) {
    fs::remove_all(created_, ec);
    return;
  }
  // fs::remove refuses a folder that is not empty, which ends the walk up.
  for (fs::path p = fs::path(folder_); fs::remove(p, ec) && p != fs::path(created_); p = p.parent_path()) {}
}

AdoptedFolder::AdoptedFolder(std::string folder)
    : folder_(std::move(folder)), on_signal_(RemoveOnSignal::tree(folder_)) {}

AdoptedFolder::~AdoptedFolder() {
  on_signal_.release();
  std::error_code ec;
  if (!folder_.empty()) fs::remove_all(folder_, ec);
}

void AdoptedFolder::keep() {
  on_signal_.release();
  folder_.clear();
}

StagedFolder::StagedFolder(std::string target)
    : target_(folder_path(target).string()),
      tmp_(staging_sibling(target_, "tmp")),
      parents_(fs::path(tmp_).parent_path().string(), true) {
  remove_stale_staging(fs::path(tmp_).parent_path().string());
  // Registered before the folder exists: a signal in between finds nothing to remove.
  on_signal_ = RemoveOnSignal::tree(tmp_);
  std::error_code ec;
  fs::create_directory(tmp_, ec);
  MEDSEG_CHECK_FILE(!ec, tmp_, "cannot create the folder: ", ec.message());
}

StagedFolder::~StagedFolder() {
  std::error_code ec;
  if (!committed_) fs::remove_all(tmp_, ec);
  on_signal_.release();
}

void StagedFolder::commit(bool replace) {
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
    // An existing target: rename() only replaces an empty folder, so exchange the two names.
    MEDSEG_CHECK_FILE(errno == ENOTEMPTY || errno == EEXIST, target_, "cannot move into place: ", std::strerror(errno));
    MEDSEG_CHECK_FILE(replace, target_, "already exists; it was left as it was");
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
      // No RENAME_EXCHANGE on this file system: the target is briefly absent (never half-written).
      const std::string old = staging_sibling(target_, "old");
      MEDSEG_CHECK_FILE(::rename(target_.c_str(), old.c_str()) == 0, target_,
                        "cannot move the old folder aside: ", std::strerror(errno));
      if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        ::rename(old.c_str(), target_.c_str());
        throw FileError(target_, concat("cannot move into place: ", why));
      }
      tmp_ = old;
      on_signal_ = RemoveOnSignal::tree(tmp_);
    }
    // tmp_ now names the old content.
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
  committed_ = true;
  on_signal_.release();
  parents_.keep();
}

}  // namespace medseg
