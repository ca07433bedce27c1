// MEDSEG_CHECK, concat and join: the message pieces every stage's errors are built from.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <list>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/path_component.h"
#include "core/strings.h"

using namespace medseg;

namespace {

// A check as the library writes one, in a function of its own (the macro is a statement).
void check_positive(int64_t n, const std::string& what) { MEDSEG_CHECK(n > 0, what, " must be positive, got ", n); }

}  // namespace

TEST(CoreError, CheckPassesSilentlyAndThrowsMedsegErrorWithTheStreamedParts) {
  EXPECT_NO_THROW(check_positive(1, "stages"));
  try {
    check_positive(-3, "stages");
    FAIL() << "no throw";
  } catch (const Error& e) { EXPECT_STREQ(e.what(), "stages must be positive, got -3"); }
}

TEST(CoreError, CheckEvaluatesItsPartsOnlyWhenItFails) {
  int evaluated = 0;
  auto part = [&] {
    ++evaluated;
    return "x";
  };
  MEDSEG_CHECK(true, part());
  EXPECT_EQ(evaluated, 0);
  EXPECT_THROW(MEDSEG_CHECK(false, part()), Error);
  EXPECT_EQ(evaluated, 1);
}

TEST(CoreError, CheckIsOneStatement) {
  // An unbraced if/else around the macro must keep its meaning (do { } while (false)).
  bool reached_else = false;
  if (false)
    MEDSEG_CHECK(false, "never");
  else
    reached_else = true;
  EXPECT_TRUE(reached_else);
}

TEST(CoreError, CheckFileThrowsFileErrorNamingThePathFirst) {
  const std::string path = "/data/case_001.nii.gz";
  int evaluated = 0;
  auto dims = [&] {
    ++evaluated;
    return 4;
  };
  MEDSEG_CHECK_FILE(true, path, "never ", dims());
  EXPECT_EQ(evaluated, 0);
  try {
    MEDSEG_CHECK_FILE(1 + 1 == 3, path, "expected 3 dimensions, got ", dims());
    FAIL() << "no throw";
  } catch (const FileError& e) {
    EXPECT_STREQ(e.what(), "/data/case_001.nii.gz: expected 3 dimensions, got 4");
    EXPECT_EQ(e.path(), path);
  }
  EXPECT_EQ(evaluated, 1);
  bool reached_else = false;  // one statement, like MEDSEG_CHECK
  if (false)
    MEDSEG_CHECK_FILE(false, path, "never");
  else
    reached_else = true;
  EXPECT_TRUE(reached_else);
}

TEST(CoreError, ConcatStreamsEachPart) {
  EXPECT_EQ(concat("a", 1, '-', std::string("b"), int64_t{-7}, size_t{3}), "a1-b-73");
  EXPECT_EQ(concat(0.5, " ", 2.0), "0.5 2");  // operator<<, not std::to_string's "0.500000"
  EXPECT_EQ(concat(), "");
}

TEST(CoreError, JoinTakesAnyContainerOfPrintableValues) {
  EXPECT_EQ(join(std::vector<std::string>{"2d", "3d_fullres"}, " "), "2d 3d_fullres");
  EXPECT_EQ(join(std::vector<int>{128, 128, 64}, "x"), "128x128x64");
  EXPECT_EQ(join(std::array<int64_t, 3>{1, -2, 3}, ", "), "1, -2, 3");
  EXPECT_EQ(join(std::set<int>{3, 1, 2}, "_"), "1_2_3");
  EXPECT_EQ(join(std::list<std::string>{"only"}, ", "), "only");
  EXPECT_EQ(join(std::vector<int>{}, ", "), "");
}

// Names quoted in messages: control characters and bytes that are not UTF-8 as \xNN (issue 42: a key of
// raw 0xff bytes reached the terminal as it was); valid UTF-8, 2 to 4 bytes, stays readable.
TEST(Printable, EscapesControlsAndInvalidUtf8Only) {
  EXPECT_EQ(medseg::printable("seg\x01x"), "seg\\x01x");
  EXPECT_EQ(medseg::printable("M\xc3\xbcller \xe2\x82\xac \xf0\x9f\x98\x80"),
            "M\xc3\xbcller \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(medseg::printable("a\xff"
                              "b"),
            "a\\xffb");
  EXPECT_EQ(medseg::printable("\xc3"), "\\xc3");                    // cut short
  EXPECT_EQ(medseg::printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(medseg::printable("\xed\xb3\xbf"), "\\xed\\xb3\\xbf");  // a surrogate (Python's surrogateescape)
}
