// The commands make OpenMP's waiting threads sleep (apps/cli_common.cpp, issue 29) unless the user set the
// policy. The fact checked is libgomp's own report of the spin count it uses (OMP_DISPLAY_ENV=verbose),
// printed when it initialises, for the process that does the work (the last report).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "support/test_support.h"

namespace {

// The GOMP_SPINCOUNT of the last OpenMP report in `out`, or "" when there is none.
std::string last_spin_count(const std::string& out) {
  static const std::regex re("GOMP_SPINCOUNT = '([0-9]+)'");
  std::string last;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it) last = (*it)[1];
  return last;
}

int reports(const std::string& out) {
  int n = 0;
  for (std::size_t at = out.find("OPENMP DISPLAY ENVIRONMENT BEGIN"); at != std::string::npos;
       at = out.find("OPENMP DISPLAY ENVIRONMENT BEGIN", at + 1))
    ++n;
  return n;
}

const char* kUnset = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose";

}  // namespace

TEST(CliOpenMP, WaitingThreadsSleepByDefault) {
  const auto r = medseg::test::run_cli("medseg_version", "", kUnset);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (reports(r.output) == 0) GTEST_SKIP() << "this LibTorch does not use GNU OpenMP (no OMP_DISPLAY_ENV report)";
  EXPECT_EQ(last_spin_count(r.output), "0") << r.output;  // libgomp's default would be 300000
}

TEST(CliOpenMP, TheUsersPolicyIsKept) {
  auto r = medseg::test::run_cli("medseg_version", "", std::string(kUnset) + " OMP_WAIT_POLICY=ACTIVE");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (reports(r.output) == 0) GTEST_SKIP() << "this LibTorch does not use GNU OpenMP (no OMP_DISPLAY_ENV report)";
  EXPECT_EQ(reports(r.output), 1) << "a policy set by the user needs no second start:\n" << r.output;
  EXPECT_EQ(last_spin_count(r.output), "30000000000") << r.output;
  r = medseg::test::run_cli("medseg_version", "", std::string(kUnset) + " GOMP_SPINCOUNT=1234");
  EXPECT_EQ(last_spin_count(r.output), "1234") << r.output;
}
