#include "core/staged_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/staging_names.h"

namespace fs = std::filesystem;

namespace medseg {

namespace {

fs::path parent_of(const std::string& target) { return fs::absolute(target).lexically_normal().parent_path(); }

}  // namespace

StagedFile::StagedFile(const std::string& target)
    : target_(target),
      parents_(parent_of(target).string(), true),
      folder_(staging_sibling(fs::absolute(target).lexically_normal().string(), "tmp")) {
  remove_stale_staging(parent_of(target).string());
  on_signal_ = RemoveOnSignal::tree(folder_);
  std::error_code ec;
  fs::create_directory(folder_, ec);
  MEDSEG_CHECK_FILE(!ec, folder_, "cannot create the folder: ", ec.message());
  file_ = (fs::path(folder_) / fs::absolute(target).lexically_normal().filename()).string();
}

StagedFile::~StagedFile() {
  std::error_code ec;
  fs::remove_all(folder_, ec);
  on_signal_.release();
}

void StagedFile::commit(bool replace) {
  if (replace) {
    MEDSEG_CHECK_FILE(::rename(file_.c_str(), target_.c_str()) == 0, target_,
                      "cannot move into place: ", std::strerror(errno));
  } else if (::renameat2(AT_FDCWD, file_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE) != 0) {
    MEDSEG_CHECK_FILE(errno != EEXIST, target_, "already exists; it was left as it was");
    // No RENAME_NOREPLACE on this file system: link() refuses an existing target just the same.
    MEDSEG_CHECK_FILE((errno == EINVAL || errno == ENOSYS) && ::link(file_.c_str(), target_.c_str()) == 0, target_,
                      errno == EEXIST ? std::string("already exists; it was left as it was")
                                      : concat("cannot move into place: ", std::strerror(errno)));
  }
  parents_.keep();
  std::error_code ec;
  fs::remove_all(folder_, ec);
  on_signal_.release();
}

}  // namespace medseg
