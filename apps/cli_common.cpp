#include "cli_common.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>
#include <cstdlib>
#include <csignal>
#include <thread>
#include <unistd.h>

#include "core/error.h"
#include "core/strings.h"
#include "core/log.h"
#include "core/rank_error_file.h"

namespace medseg::cli {

// "-np 4" / "-np=4" -> "--np 4" / "--np=4" when "--np" is declared (see cli_common.h).
static std::vector<std::string> nnunet_style_args(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() > 2 && a[0] == '-' && a[1] != '-' && !std::isdigit(static_cast<unsigned char>(a[1])) && a[1] != '.') {
      const std::string name = a.substr(1, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 1);
      if (app.get_option_no_throw("--" + name) != nullptr) a = "-" + a;
    }
    out.push_back(a);
  }
  std::reverse(out.begin(), out.end());  // CLI11 parses a reversed vector
  return out;
}

// OpenMP's waiting threads sleep in medseg's commands unless the user chose otherwise (issue 29).
// GNU OpenMP (libgomp, used by Debian's LibTorch and by PyTorch's wheel) lets a thread that waits at a
// barrier spin up to GOMP_SPINCOUNT (300000) rounds before it sleeps. On a shared machine the spinning
// threads take the cores that threads with work need, and every parallel region waits for a descheduled
// thread: beside two busy processes medseg_predict needed 2-3x the wall and CPU time of the same run with
// OMP_WAIT_POLICY=PASSIVE (scripts/bench/bench_contention.sh; docs/predict.md). libgomp reads the policy
// once, while the program loads, and a setenv() from a constructor that runs before it is not honoured
// for the spin count (GCC 12's libgomp), so the command executes itself again with the policy set: about
// the cost of loading the libraries once more, and nothing at all when either variable is already set.
static void sleep_while_waiting(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 0) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: run on with libgomp's default
  unsetenv("OMP_WAIT_POLICY");
}

// A write to a connection whose peer has died (Gloo's writev to a killed rank, a client that hung up on
// medseg_serve) raises SIGPIPE, and its default action ends the process without a word: the rank that
// should have said why it stopped vanished instead (seen in CI under load). With a
// handler the write fails with EPIPE, which the caller reports like any other error. A handler that does
// nothing, not SIG_IGN: a caught signal is reset to its default by exec, so the programs a command starts
// (the launcher's ranks, a shell pipeline) keep the usual behaviour.
static void report_broken_connections() {
  struct sigaction action {};
  action.sa_handler = [](int) {};
  sigemptyset(&action.sa_mask);
  sigaction(SIGPIPE, &action, nullptr);
}

int run(int argc, char** argv, CLI::App& app, const std::function<int()>& body) {
  sleep_while_waiting(argv);
  report_broken_connections();
  bool verbose = false;
  app.add_flag("--verbose", verbose, "More log output");
  try {
    auto args = nnunet_style_args(app, argc, argv);
    app.parse(args);
  } catch (const CLI::ParseError& e) { return app.exit(e); }
  init_logging(verbose);
  try {
    return body();
  } catch (const std::exception& e) {
    // medseg::Error and everything else alike: LibTorch errors (also when wrapped in an Error) carry a
    // C++ backtrace after the first line, and the user gets exactly one line.
    const std::string line = app.get_name() + ": error: " + one_line(e.what());
    // A rank started by --nproc_per_node leaves its line to the launcher, which prints one for all ranks.
    const char* to_launcher = std::getenv(kRankErrorFileVariable);
    if (FILE* f = to_launcher && *to_launcher ? std::fopen(to_launcher, "w") : nullptr) {
      const bool written = std::fprintf(f, "%s\n", line.c_str()) > 0;
      if (std::fclose(f) == 0 && written) return 1;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  return 1;
}

int default_threads() {
  if (const char* v = std::getenv("MEDSEG_NUM_THREADS")) {
    const int n = std::atoi(v);
    if (n > 0) return n;
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

}  // namespace medseg::cli
