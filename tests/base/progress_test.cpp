// Progress bars: plain lines when stderr is not a terminal, and silence under the process-wide
// switch a CLI's --no_pbar sets (library code deep in a call creates bars without a flag).
#include <gtest/gtest.h>

#include "core/progress.h"

using namespace medseg;

namespace {

std::string run_bar(bool enabled_here) {
  testing::internal::CaptureStderr();
  {
    ProgressBar bar("work", 4, enabled_here);
    for (int i = 0; i < 4; ++i) bar.tick();
  }
  return testing::internal::GetCapturedStderr();
}

}  // namespace

TEST(Progress, PrintsLabelAndCount) {
  const std::string out = run_bar(true);
  EXPECT_NE(out.find("work"), std::string::npos) << out;
  EXPECT_NE(out.find("4/4"), std::string::npos) << out;
}

TEST(Progress, SilencedPerBarAndProcessWide) {
  EXPECT_EQ(run_bar(false), "");
  set_progress_bars_enabled(false);
  const std::string silenced = run_bar(true);
  set_progress_bars_enabled(true);
  EXPECT_EQ(silenced, "");
  EXPECT_NE(run_bar(true), "");
}
