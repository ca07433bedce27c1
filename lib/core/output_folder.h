#pragma once
// Output folders that a failed command does not leave behind. A CLI that fails on bad input must
// leave the disk as it found it: no empty or half-filled folders (which later commands mistake for
// real results), and never anything removed that existed before it started. The same holds when
// SIGINT or SIGTERM ends the command (signal_cleanup.h).
#include <string>

#include "core/signal_cleanup.h"

namespace medseg {

// Creates `folder` with its missing parents. Unless keep() is called, the destructor removes what
// this object created (the topmost folder that did not exist), with everything in it; a folder that
// existed before is never removed. With `only_if_empty`, it removes the folders it created only
// while they are empty, from `folder` up: for parents that another process may fill meanwhile.
class NewFolderGuard {
 public:
  explicit NewFolderGuard(const std::string& folder, bool only_if_empty = false);
  ~NewFolderGuard();
  NewFolderGuard(const NewFolderGuard&) = delete;
  NewFolderGuard& operator=(const NewFolderGuard&) = delete;
  void keep();

 private:
  std::string created_;  // "" when nothing was created
  std::string folder_;
  bool only_if_empty_ = false;
  RemoveOnSignal on_signal_;
};

// A folder that this run made by other means (a StagedFolder committed, a library call that keeps
// its output) and that must go again if the run fails at a later step: the destructor removes it,
// with everything in it, unless keep() was called; so does SIGINT/SIGTERM.
class AdoptedFolder {
 public:
  explicit AdoptedFolder(std::string folder);
  ~AdoptedFolder();
  AdoptedFolder(const AdoptedFolder&) = delete;
  AdoptedFolder& operator=(const AdoptedFolder&) = delete;
  void keep();

 private:
  std::string folder_;
  RemoveOnSignal on_signal_;
};

// A folder built under a hidden temporary sibling name (".NAME.tmp.HOST.PID.RANDOM",
// staging_names.h) and moved into place by commit(), so `target` holds either its previous content
// or the complete new one. The destructor, or SIGINT/SIGTERM, removes an uncommitted build; a failed
// build therefore leaves `target` untouched. The constructor first removes the staging folders that
// killed processes left beside `target`.
class StagedFolder {
 public:
  explicit StagedFolder(std::string target);  // creates the temporary folder (and target's parents)
  ~StagedFolder();
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  const std::string& path() const { return tmp_; }  // build here
  // Replaces `target` (if it exists) with the built folder: an atomic exchange where the file system
  // supports it, else rename-aside, rename-in; then removes the old content. With `replace` false, a
  // non-empty `target` is never replaced, also one that appeared while the folder was built: FileError.
  void commit(bool replace = true);

 private:
  std::string target_, tmp_;
  bool committed_ = false;
  NewFolderGuard parents_;
  RemoveOnSignal on_signal_;
};

}  // namespace medseg
