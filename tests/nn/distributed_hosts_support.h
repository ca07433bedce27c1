#pragma once
// Helpers for tests whose ranks run as separate processes: started torchrun style (the five
// variables), on this host or on one of two "hosts", network namespaces joined by a veth pair
// (10.78.0.1 and 10.78.0.2). Everything started is killed and the namespaces deleted when the
// object goes, also when a test fails half way.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.h"

namespace medseg::test {

inline bool can_make_namespaces() { return geteuid() == 0 && std::system("ip netns list >/dev/null 2>&1") == 0; }

// `RANK=.. WORLD_SIZE=.. LOCAL_RANK=0 MASTER_ADDR=.. MASTER_PORT=..`: what torchrun sets, nothing more.
inline std::string torchrun_env(int rank, int world, const std::string& addr, int port) {
  return "RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(world) + " LOCAL_RANK=0 MASTER_ADDR=" + addr +
         " MASTER_PORT=" + std::to_string(port);
}

// Waits for `pid` up to `limit`; its exit status (128 + signal), or -1 after killing it at the limit.
// `seconds`: how long it took.
inline int wait_exit(pid_t pid, std::chrono::seconds limit, double* seconds = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  int st = 0;
  int rc = 0;
  while ((rc = waitpid(pid, &st, WNOHANG)) == 0) {
    if (std::chrono::steady_clock::now() - start > limit) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rc < 0) return -2;  // not our child, or reaped already
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Waits until `file` holds `text` (or exists, for text ""), or `limit` passes.
inline bool wait_for_file(const std::string& file, const std::string& text, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (text.empty() ? ::access(file.c_str(), F_OK) == 0 : read_text(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Processes started by a test, killed (SIGKILL) and reaped when it ends.
class Processes {
 public:
  ~Processes() {
    for (pid_t p : pids_) {
      if (waitpid(p, nullptr, WNOHANG) == 0) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
      }
    }
  }
  // `sh -c "exec <command> > log 2>&1"`: the pid is the command's.
  pid_t start(const std::string& command, const std::string& log) {
    const std::string cmd = "exec " + command + " > " + log + " 2>&1";
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    pids_.push_back(pid);
    return pid;
  }

 private:
  std::vector<pid_t> pids_;
};

// Two network namespaces, medseg_h0_<pid> and medseg_h1_<pid>, each with its loopback up and one end
// of a veth pair: host 0 is 10.78.0.1, host 1 10.78.0.2. Namespaces left by a test process that no
// longer exists (killed by a time-out) are deleted first.
class TwoHosts {
 public:
  TwoHosts() {
    remove_stale();
    const std::string id = std::to_string(getpid());
    for (int h = 0; h < 2; ++h) ns_[h] = "medseg_h" + std::to_string(h) + "_" + id;
    link_[0] = "mh" + id + "a";
    link_[1] = "mh" + id + "b";
    std::string cmd = "ip netns add " + ns_[0] + " && ip netns add " + ns_[1] + " && ip link add " + link_[0] +
                      " netns " + ns_[0] + " type veth peer name " + link_[1] + " netns " + ns_[1];
    for (int h = 0; h < 2; ++h)
      cmd += " && ip -n " + ns_[h] + " addr add " + address(h) + "/24 dev " + link_[h] + " && ip -n " + ns_[h] +
             " link set " + link_[h] + " up && ip -n " + ns_[h] + " link set lo up";
    ok_ = std::system((cmd + " 2>&1").c_str()) == 0;
  }
  ~TwoHosts() {
    // The processes inside first (a namespace lives on while a process holds it).
    for (int h = 0; h < 2; ++h)
      std::system(("for p in $(ip netns pids " + ns_[h] + " 2>/dev/null); do kill -9 $p; done; ip netns del " + ns_[h] +
                   " 2>/dev/null")
                      .c_str());
  }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  bool ok() const { return ok_; }
  static std::string address(int host) { return "10.78.0." + std::to_string(host + 1); }
  // `command` run inside host `host`'s namespace.
  std::string on(int host, const std::string& command) const {
    return "ip netns exec " + ns_[host] + " env " + command;
  }
  // Pulls host 1's end of the link down (host 0 loses its carrier too), and back up.
  bool cut() const { return std::system(("ip -n " + ns_[1] + " link set " + link_[1] + " down").c_str()) == 0; }
  bool restore() const { return std::system(("ip -n " + ns_[1] + " link set " + link_[1] + " up").c_str()) == 0; }

 private:
  static void remove_stale() {
    std::system(
        "for n in $(ip netns list 2>/dev/null | grep -o '^medseg_h[01]_[0-9]*'); do "
        "p=${n##*_}; [ -d /proc/$p ] || ip netns del $n 2>/dev/null; done");
  }
  std::string ns_[2], link_[2];
  bool ok_ = false;
};

}  // namespace medseg::test
