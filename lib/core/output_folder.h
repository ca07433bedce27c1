#pragma once
// Output folders that a failed command does not leave behind. A CLI that fails on bad input must
// leave the disk as it found it: no empty or half-filled folders (which later commands mistake for
// real results), and never anything removed that existed before it started.
#include <string>

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
  void keep() { created_.clear(); }

 private:
  std::string created_;  // "" when nothing was created
  std::string folder_;
  bool only_if_empty_ = false;
};

// A folder built under a hidden temporary sibling name (".NAME.tmp.PID.RANDOM") and moved into
// place by commit(), so `target` holds either its previous content or the complete new one. The
// destructor removes an uncommitted build; a failed build therefore leaves `target` untouched.
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
};

}  // namespace medseg
