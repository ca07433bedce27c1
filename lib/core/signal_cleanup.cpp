#include "core/signal_cleanup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "core/log.h"

namespace medseg {

namespace {

enum class Kind : int { Tree, EmptyFolders };
enum State : int { kFree = 0, kWriting = 1, kActive = 2 };

// One registered path. Written by one thread while kWriting, read by the handler only while kActive.
struct Slot {
  std::atomic<int> state{kFree};
  std::atomic<uint64_t> order{0};
  Kind kind = Kind::Tree;
  std::size_t stop = 0;  // EmptyFolders: the length of the topmost folder's path
  char path[PATH_MAX] = {};
};

Slot g_slots[kMaxRemoveOnSignal];
std::atomic<uint64_t> g_next_order{1};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the signal handler reads these");

// Deep enough for any folder medseg stages (a model folder: fold_K/validation/file); bounded so
// the handler's stack use is (kMaxDepth x kDirentBuffer) whatever the folder holds.
constexpr int kMaxDepth = 12;
constexpr std::size_t kDirentBuffer = 1024;

// Removes `name` in `dirfd` and, for a folder, what it holds. Only async-signal-safe calls; a
// failure leaves the rest for the next run's staging sweep.
void remove_at(int dirfd, const char* name, int depth);

void empty_folder(int fd, int depth) {
  alignas(8) char buf[kDirentBuffer];
  // Entries removed while reading may shift the rest; read again from the start until a whole pass
  // finds nothing but "." and "..", or nothing more can be removed.
  for (int pass = 0; pass < 64; ++pass) {
    if (::lseek(fd, 0, SEEK_SET) != 0) return;
    bool any = false;
    long n = 0;
    while ((n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
      for (long off = 0; off < n;) {
        // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
        unsigned short reclen = 0;
        std::memcpy(&reclen, buf + off + 16, sizeof reclen);
        const char* entry = buf + off + 19;
        off += reclen;
        if (reclen == 0) return;
        if (std::strcmp(entry, ".") == 0 || std::strcmp(entry, "..") == 0) continue;
        any = true;
        remove_at(fd, entry, depth);
      }
    }
    if (!any || n < 0) return;
  }
}

void remove_at(int dirfd, const char* name, int depth) {
  if (::unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return;  // a file or a link (never followed)
  if (errno != EISDIR && errno != EPERM) return;
  if (depth < kMaxDepth) {
    const int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      empty_folder(fd, depth + 1);
      ::close(fd);
    }
  }
  ::unlinkat(dirfd, name, AT_REMOVEDIR);
}

void remove_slot(Slot& s) {
  if (s.kind == Kind::Tree) {
    remove_at(AT_FDCWD, s.path, 0);
    return;
  }
  // EmptyFolders: rmdir from the deepest folder up while each is empty (rmdir refuses otherwise).
  char p[PATH_MAX];
  std::size_t len = std::strlen(s.path);
  std::memcpy(p, s.path, len + 1);
  while (len >= s.stop && len > 1) {
    if (::rmdir(p) != 0) return;
    while (len > 0 && p[len - 1] != '/') --len;
    while (len > 1 && p[len - 1] == '/') --len;
    p[len] = '\0';
  }
}

extern "C" void on_terminating_signal(int sig) {
  const int saved_errno = errno;
  // Newest first, as destructors would run: a staging folder before the parents made for it.
  bool done[kMaxRemoveOnSignal] = {};
  for (;;) {
    int next = -1;
    uint64_t newest = 0;
    for (int i = 0; i < kMaxRemoveOnSignal; ++i)
      if (!done[i] && g_slots[i].state.load(std::memory_order_acquire) == kActive &&
          g_slots[i].order.load(std::memory_order_relaxed) >= newest) {
        next = i;
        newest = g_slots[i].order.load(std::memory_order_relaxed);
      }
    if (next < 0) break;
    done[next] = true;
    remove_slot(g_slots[next]);
  }
  // Die of the signal as if no handler had been installed. It is blocked while this handler runs,
  // so raise() leaves it pending until the handler returns.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
  errno = saved_errno;
}

// Installs the handler for a signal whose disposition is still the default. A process that handles
// the signal itself (medseg_train's graceful stop, the distributed launcher) keeps its handler: it
// unwinds, and the destructors remove what the signal handler would have.
void install_handlers() {
  for (const int sig : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0 || current.sa_handler != SIG_DFL ||
        (current.sa_flags & SA_SIGINFO) != 0)
      continue;
    struct sigaction sa {};
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);  // one cleanup at a time in this thread
    sigaddset(&sa.sa_mask, SIGTERM);
    ::sigaction(sig, &sa, nullptr);
  }
}

// Relative paths would follow a later chdir: the handler gets the absolute one, without a trailing '/'.
std::string absolute_path(const std::string& path) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) return "";
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  return abs;
}

int claim_slot(const std::string& path, Kind kind, std::size_t stop) {
  const std::string abs = absolute_path(path);
  if (abs.empty() || abs.size() + 1 > PATH_MAX) return -1;
  for (int i = 0; i < kMaxRemoveOnSignal; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) continue;
    Slot& s = g_slots[i];
    s.kind = kind;
    s.stop = stop;
    std::memcpy(s.path, abs.c_str(), abs.size() + 1);
    s.order.store(g_next_order.fetch_add(1), std::memory_order_relaxed);
    s.state.store(kActive, std::memory_order_release);
    install_handlers();
    return i;
  }
  spdlog::warn("{}: more than {} paths to remove on Ctrl-C at once; this one stays if the command is interrupted", path,
               kMaxRemoveOnSignal);
  return -1;
}

}  // namespace

RemoveOnSignal& RemoveOnSignal::operator=(RemoveOnSignal&& o) noexcept {
  if (this != &o) {
    release();
    slot_ = o.slot_;
    o.slot_ = -1;
  }
  return *this;
}

RemoveOnSignal RemoveOnSignal::tree(const std::string& path) { return RemoveOnSignal(claim_slot(path, Kind::Tree, 0)); }

RemoveOnSignal RemoveOnSignal::empty_folders(const std::string& deepest, const std::string& topmost) {
  const std::string top = absolute_path(topmost);
  return RemoveOnSignal(claim_slot(deepest, Kind::EmptyFolders, top.empty() ? std::string::npos : top.size()));
}

void RemoveOnSignal::release() {
  if (slot_ < 0) return;
  g_slots[slot_].state.store(kFree, std::memory_order_release);
  slot_ = -1;
}

}  // namespace medseg
