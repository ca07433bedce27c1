// Typed JSON reads (json_as in core/json_object_reader.h) name the file and
// key (issue 15, "messages that lose context"): numbers a double
// cannot hold, integers beyond the target type, fractions where an integer is expected, wrong types.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "core/json_io.h"
#include "core/json_object_reader.h"
#include "core/ordered_json_io.h"
#include "support/test_support.h"

using namespace medseg;

TEST(BadInputJson, ParseErrorsNameTheFile) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {R"({"batch_size": 1e400})", "invalid JSON (number overflow parsing '1e400')"},
      {R"({"batch_size": -1e400})", "invalid JSON (number overflow parsing '-1e400')"},
      {R"({"batch_size": 2,})", "invalid JSON (parse error"},
  };
  test::TempDir dir("json");
  for (const auto& [text, fragment] : rows) {
    SCOPED_TRACE(text);
    std::ofstream(dir / "f.json") << text;
    try {
      read_json(dir / "f.json");
      ADD_FAILURE() << "parsed";
    } catch (const FileError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(dir / "f.json: " + fragment, 0), 0u) << e.what();
    }
  }
}

// Issue 42: 100,000 nested arrays (200 KB) crashed the readers (a recursive walk ran off the stack).
// The limit sits between what nnU-Net writes and what a recursion survives: 100 levels read, 101 do not,
// in objects as in arrays, in every reader (plain and key-ordered).
TEST(BadInputJson, NestingIsBoundedInEveryReader) {
  const auto nested = [](int depth, bool objects) {
    std::string open, close;
    for (int i = 0; i < depth; ++i) {
      open += objects ? "{\"k\":" : "[";
      close += objects ? "}" : "]";
    }
    return open + "1" + close;
  };
  test::TempDir dir("json");
  for (const bool objects : {false, true}) {
    SCOPED_TRACE(objects ? "objects" : "arrays");
    std::ofstream(dir / "ok.json") << nested(kMaxJsonDepth, objects);
    EXPECT_NO_THROW(read_json(dir / "ok.json"));
    EXPECT_NO_THROW(read_ordered_json(dir / "ok.json"));
    for (const int depth : {kMaxJsonDepth + 1, 100000}) {
      std::ofstream(dir / "deep.json") << nested(depth, objects);
      const std::string want = dir / "deep.json: invalid JSON (nested deeper than 100 levels)";
      for (const bool ordered : {false, true}) {
        try {
          ordered ? (void)read_ordered_json(dir / "deep.json") : (void)read_json(dir / "deep.json");
          ADD_FAILURE() << "parsed depth " << depth;
        } catch (const FileError& e) { EXPECT_EQ(std::string(e.what()), want); }
      }
    }
  }
  EXPECT_THROW(parse_json_text<json>(nested(101, false), "entry"), FileError);
  EXPECT_EQ(parse_json_text<json>(nested(3, false), "entry"), json::parse("[[[1]]]"));
}

// Issue 26: a folder where a JSON file belongs read as an empty file.
TEST(BadInputJson, AFolderIsNamedAsAFolder) {
  test::TempDir dir("json");
  std::filesystem::create_directories(dir / "plans.json");
  try {
    read_json(dir / "plans.json");
    ADD_FAILURE() << "read";
  } catch (const FileError& e) { EXPECT_EQ(std::string(e.what()), dir / "plans.json: is a folder, not a file"); }
}

TEST(BadInputJson, TypedReadsCheckTypeAndRange) {
  const json j = json::parse(R"({"big": 99999999999999999999, "int64_max": 9223372036854775807, "neg": -1,
                                 "half": 2.5, "whole": 36.0, "text": "x", "flag": true, "list": [1, 2.5]})");
  const auto message = [&](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const FileError& e) { return e.what(); }
    return "";
  };
  const std::string f = "/p/plans.json";
  EXPECT_EQ(message([&] { json_as<int>(j.at("big"), "key 'big'", f); }),
            f + ": key 'big' is 1e+20 (expected an integer in -2147483648..2147483647)");
  EXPECT_EQ(message([&] { json_as<int>(j.at("int64_max"), "key 'int64_max'", f); }),
            f + ": key 'int64_max' is 9223372036854775807 (expected an integer in -2147483648..2147483647)");
  EXPECT_EQ(message([&] { json_as<uint64_t>(j.at("neg"), "key 'neg'", f); }),
            f + ": key 'neg' is -1 (expected an integer in 0..18446744073709551615)");
  EXPECT_EQ(message([&] { json_as<int>(j.at("half"), "key 'half'", f); }),
            f + ": key 'half' is 2.5 (expected an integer in -2147483648..2147483647)");
  EXPECT_EQ(message([&] { json_as<int>(j.at("text"), "key 'text'", f); }),
            f + ": key 'text' is \"x\" (expected an integer in -2147483648..2147483647)");
  EXPECT_EQ(message([&] { json_as<std::string>(j.at("flag"), "key 'flag'", f); }),
            f + ": key 'flag' is true (expected a string)");
  EXPECT_EQ(message([&] { json_as<std::vector<int>>(j.at("list"), "key 'list'", f); }),
            f + ": key 'list'[1] is 2.5 (expected an integer in -2147483648..2147483647)");
  EXPECT_EQ(json_as<int>(j.at("whole"), "key 'whole'", f), 36);  // an integral float is the integer
  EXPECT_EQ(json_as<int64_t>(j.at("int64_max"), "key 'int64_max'", f), INT64_MAX);
  EXPECT_EQ(json_as<double>(j.at("half"), "key 'half'", f), 2.5);
}
