#pragma once
// One output file built inside a hidden staging folder beside its target and renamed into place by
// commit(). For writers that make temporary files of their own next to what they write (libzip's
// "OUT.zip.XXXXXX"): those land inside the staging folder too, which a failure (the destructor) or
// SIGINT/SIGTERM removes whole, so nothing is left beside the target; a SIGKILLed build is removed
// by the next StagedFile or StagedFolder in that folder (staging_names.h).
#include <string>

#include "core/output_folder.h"
#include "core/signal_cleanup.h"

namespace medseg {

class StagedFile {
 public:
  // Creates the target's missing parent folders (removed again unless committed) and the staging
  // folder. Throws FileError naming the folder that cannot be created.
  explicit StagedFile(const std::string& target);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  // Where to write: a path in the staging folder that does not exist yet.
  const std::string& path() const { return file_; }
  // Renames the file over `target` (with `replace`, an existing file is replaced atomically;
  // without, an existing target, also one that appeared meanwhile, is a FileError and is kept).
  void commit(bool replace);

 private:
  std::string target_;
  NewFolderGuard parents_;
  std::string folder_, file_;
  RemoveOnSignal on_signal_;
};

}  // namespace medseg
