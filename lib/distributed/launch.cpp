#include "distributed/launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.h"

extern char** environ;

namespace medseg::distributed {
namespace {

volatile std::sig_atomic_t g_launcher_signal = 0;
extern "C" void on_launcher_signal(int) { g_launcher_signal = g_launcher_signal + 1; }

// Restores the launcher's SIGINT/SIGTERM handlers when it returns.
class ScopedForwarding {
 public:
  ScopedForwarding() {
    struct sigaction sa {};
    sa.sa_handler = on_launcher_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    g_launcher_signal = 0;
  }
  ~ScopedForwarding() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // exit status, 128 + signal when killed
};

// Everything the child needs is built before fork(): between fork and exec only async-signal-safe
// calls are allowed in a threaded program.
pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, pid_t launcher) {
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = fork();
  MEDSEG_CHECK(pid >= 0, "--nproc_per_node: cannot start a rank: ", std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // Ctrl-C reaches the launcher only; it forwards it once
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(1);  // the launcher died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve("/proc/self/exe", argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// A rank's one-line error goes to a file of the launcher's (kRankErrorFileVariable, written by the CLI's
// error handler) instead of stderr, so that a refusal every rank makes reaches the user once: the
// launcher prints the first failing rank's line and nothing else.
class ErrorFolder {
 public:
  ErrorFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/medseg_ranks_XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;  // without it, ranks print their own lines
  }
  ~ErrorFolder() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string file(int rank) const { return path_.empty() ? "" : path_ + "/rank_" + std::to_string(rank); }
  std::string line(int rank) const {
    std::ifstream in(file(rank));
    std::string l;
    std::getline(in, l);
    return l;
  }

 private:
  std::string path_;
};

std::vector<std::string> rank_environment(int rank, int nproc, int port, const std::string& error_file) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" ||
        key == "MASTER_ADDR" || key == "MASTER_PORT" || key == kRankErrorFileVariable)
      continue;
    env.push_back(kv);
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(nproc));
  env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(nproc));
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  if (!error_file.empty()) env.push_back(std::string(kRankErrorFileVariable) + "=" + error_file);
  return env;
}

std::string describe(int status) {
  if (status > 128) return concat("was killed by signal ", status - 128, " (", strsignal(status - 128), ")");
  return concat("exited with status ", status);
}

// Reaps finished ranks; returns the index of one that failed, or -1.
int reap(std::vector<Rank>& ranks) {
  int failed = -1;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r].running) continue;
    int st = 0;
    const pid_t got = waitpid(ranks[r].pid, &st, WNOHANG);
    if (got != ranks[r].pid) continue;
    ranks[r].running = false;
    ranks[r].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (ranks[r].status != 0 && failed < 0) failed = static_cast<int>(r);
  }
  return failed;
}

bool any_running(const std::vector<Rank>& ranks) {
  for (const auto& r : ranks)
    if (r.running) return true;
  return false;
}

void signal_all(const std::vector<Rank>& ranks, int sig) {
  for (const auto& r : ranks)
    if (r.running) kill(r.pid, sig);
}

// Waits for the remaining ranks; SIGKILL after `grace`.
void wait_all(std::vector<Rank>& ranks, std::chrono::seconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (any_running(ranks)) {
    reap(ranks);
    if (std::chrono::steady_clock::now() > deadline) signal_all(ranks, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  MEDSEG_CHECK(fd >= 0, "cannot open a socket to find a free port: ", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  close(fd);
  MEDSEG_CHECK(ok, "cannot find a free loopback port: ", std::strerror(errno));
  return ntohs(a.sin_port);
}

int launch_local_ranks(const std::vector<std::string>& args, const LaunchOptions& o) {
  MEDSEG_CHECK(o.nproc >= 1, "--nproc_per_node must be at least 1");
  const int port = free_loopback_port();
  const ScopedForwarding forwarding;
  const ErrorFolder errors;
  std::vector<Rank> ranks(static_cast<size_t>(o.nproc));
  for (int r = 0; r < o.nproc; ++r) {
    ranks[static_cast<size_t>(r)].pid = spawn(args, rank_environment(r, o.nproc, port, errors.file(r)), getpid());
    ranks[static_cast<size_t>(r)].running = true;
  }
  int forwarded = 0;  // signals passed on: the first as SIGINT, a second one kills
  int first_failed = -1;
  while (any_running(ranks)) {
    const int failed = reap(ranks);
    // After a forwarded Ctrl-C the ranks exit on their own (130) once rank 0 has saved.
    if (failed >= 0 && !forwarded) {
      first_failed = failed;
      // The rank's own error line when it left one (a refusal: every rank may have made it), else
      // what happened to it (killed, crashed).
      const std::string line = errors.line(failed);
      if (!line.empty())
        std::fprintf(stderr, "%s\n", line.c_str());
      else
        std::fprintf(stderr, "%s: rank %d %s%s\n", o.program_name.c_str(), failed,
                     describe(ranks[static_cast<size_t>(failed)].status).c_str(),
                     any_running(ranks) ? "; stopping the other ranks" : "");
      signal_all(ranks, SIGTERM);
      wait_all(ranks, o.grace);
      break;
    }
    if (g_launcher_signal > forwarded) {
      signal_all(ranks, forwarded == 0 ? SIGINT : SIGKILL);  // the ranks stop together; rank 0 saves once
      forwarded = g_launcher_signal;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (first_failed >= 0) return ranks[static_cast<size_t>(first_failed)].status;
  for (const auto& r : ranks)
    if (r.status != 0) return r.status;
  return 0;
}

}  // namespace medseg::distributed
