// ITK 5.2 keeps its process-wide globals in an unlocked map that is filled on first use. Before
// io/itk_globals.h created them up front, 8 writer threads starting at once corrupted the heap in
// about 1 run in 40 (a double free, a segfault or a hang at exit; it failed CI once). The damage
// shows when the process exits, so this runs the multi-threaded CLI in many fresh processes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

TEST(ItkGlobals, ManyFreshProcessesWritingInParallelAllExitCleanly) {
  constexpr int kRuns = 150;  // ~99.5% chance to catch a 1-in-40 failure
  test::TempDir dir{"itkrace"};
  int failures = 0;
  std::string first_failure;
  for (int i = 0; i < kRuns; ++i) {
    const std::string root = dir.path() + "/" + std::to_string(i);
    fs::create_directories(root);
    // `timeout` (the command prefix) turns a hang at exit into exit code 124.
    const auto res = test::run_cli("medseg_make_dataset",
                                   "-o " + root +
                                       " -d 952 -n Race --cases 8 --min-shape 8 8 8 --max-shape 8 8 8 "
                                       "--np 8 --seed " +
                                       std::to_string(i + 1),
                                   "timeout 60");
    if (res.exit_code != 0 && failures++ == 0)
      first_failure = "run " + std::to_string(i) + ": exit " + std::to_string(res.exit_code) + "\n" + res.output;
    fs::remove_all(root);
  }
  EXPECT_EQ(failures, 0) << first_failure;
}
