#pragma once
// What a command is building (a staging folder, a temporary file, an output folder it created) goes
// away when SIGINT or SIGTERM ends the command, as it does when the command fails: README's "a failed
// command leaves nothing behind" holds under Ctrl-C and `kill` too. The handler removes the
// registered paths, newest first, with async-signal-safe calls only (unlinkat, openat, getdents64,
// rmdir), and then the process dies of the same signal by its default action, so a shell or a
// parent still sees "killed by SIGTERM". SIGKILL cannot be caught: staging names carry the host and
// the pid, and the next run removes those of dead processes (staging_names.h).
#include <string>

namespace medseg {

class RemoveOnSignal {
 public:
  RemoveOnSignal() = default;
  ~RemoveOnSignal() { release(); }
  RemoveOnSignal(RemoveOnSignal&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  RemoveOnSignal& operator=(RemoveOnSignal&& o) noexcept;
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

  // `path` and everything in it (a file, a link or a folder; links are removed, never followed).
  static RemoveOnSignal tree(const std::string& path);
  // `deepest`, then its parents up to and including `topmost`, each only while it is empty: folders
  // created for an output that other processes may fill meanwhile (NewFolderGuard's only_if_empty).
  static RemoveOnSignal empty_folders(const std::string& deepest, const std::string& topmost);

  // No longer removed on a signal (the path was committed, or cleaned up by the caller).
  void release();

 private:
  explicit RemoveOnSignal(int slot) : slot_(slot) {}
  int slot_ = -1;  // -1: nothing registered
};

// How many paths can be registered at once (static storage: the handler may not allocate). A
// registration beyond it is skipped with a warning; the staging sweep still removes what is left.
inline constexpr int kMaxRemoveOnSignal = 64;

}  // namespace medseg
