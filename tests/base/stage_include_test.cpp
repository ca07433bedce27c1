// The build enforces the stage graph (cmake/MedsegStage.cmake): a file of a stage that includes a stage it
// does not depend on does not compile. Checked with the build's own compile command of a planning file
// (compile_commands.json), pointed at a probe file: planning depends on core and plans only, so "core/error.h" is found
// and "io/dataset.h" is not, although both are in lib/.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// The compile command of lib/<file> in this build, made to check `probe`'s syntax only.
std::string syntax_check_command(const std::string& file, const fs::path& probe) {
  const fs::path build = fs::path(test::bin_dir()).parent_path();
  std::ifstream in(build / "compile_commands.json");
  if (!in) return "";
  const auto commands = nlohmann::json::parse(in);
  for (const auto& c : commands) {
    if (c.at("file").get<std::string>() != test::source_path("lib/" + file)) continue;
    std::string cmd = c.at("command").get<std::string>();
    cmd = std::regex_replace(cmd, std::regex(R"( -(o|MT|MF) \S+)"), "");
    cmd = std::regex_replace(cmd, std::regex(R"( -MD\b)"), "");
    cmd = std::regex_replace(cmd, std::regex(R"( -c \S+)"), " -fsyntax-only -c " + probe.string());
    return "cd " + c.at("directory").get<std::string>() + " && " + cmd;
  }
  return "";
}

// The usage example in a header's leading comment: the lines after "The example below compiles", without their
// "//   " prefix, up to the first line that is not part of it.
std::string header_example(const fs::path& header) {
  std::ifstream in(header);
  std::string line, code;
  bool in_example = false;
  while (std::getline(in, line)) {
    if (line.find("The example below compiles") != std::string::npos) {
      in_example = true;
      continue;
    }
    if (!in_example) continue;
    if (line.rfind("//   ", 0) != 0) break;
    code += line.substr(5) + "\n";
  }
  return code;
}

}  // namespace

// The API headers' usage examples are code that compiles against the headers as the api stage sees them (a doc
// test): a header change that breaks its own example fails here.
TEST(ApiDocExamples, HeaderUsageExamplesCompile) {
  test::TempDir dir("api_examples");
  for (const char* header : {"api/train.h", "api/segmenter.h"}) {
    const std::string code = header_example(test::source_path(std::string("lib/") + header));
    ASSERT_GE(std::count(code.begin(), code.end(), '\n'), 4) << header << ": no example found";
    const fs::path probe = dir / "example.cpp";
    std::ofstream(probe) << "#include <cstdio>\n#include \"" << header
                         << "\"\n#include \"io/image_io.h\"\nbool cancel_pressed = false;\nvoid example() {\n"
                         << code << "}\n";
    const std::string cmd = syntax_check_command("api/train.cpp", probe);
    if (cmd.empty()) GTEST_SKIP() << "this build has no compile_commands.json entry for lib/api/train.cpp";
    const auto r = test::run_cli("/bin/sh", "-c '" + cmd + "'");
    EXPECT_EQ(r.exit_code, 0) << header << "'s example does not compile:\n" << code << r.output;
  }
}

TEST(Layering, AnUndeclaredIncludeDoesNotCompile) {
  test::TempDir dir("stage_include");
  const fs::path allowed = dir / "allowed.cpp", forbidden = dir / "forbidden.cpp";
  std::ofstream(allowed) << "#include \"core/error.h\"\nint probe() { return 0; }\n";
  std::ofstream(forbidden) << "#include \"io/dataset.h\"\nint probe() { return 0; }\n";

  const std::string ok = syntax_check_command("planning/planner.cpp", allowed);
  if (ok.empty()) GTEST_SKIP() << "this build has no compile_commands.json entry for lib/planning/planner.cpp";
  const auto r_ok = test::run_cli("/bin/sh", "-c '" + ok + "'");
  EXPECT_EQ(r_ok.exit_code, 0) << r_ok.output;

  const auto r_bad = test::run_cli("/bin/sh", "-c '" + syntax_check_command("planning/planner.cpp", forbidden) + "'");
  EXPECT_NE(r_bad.exit_code, 0);
  EXPECT_NE(r_bad.output.find("io/dataset.h"), std::string::npos) << r_bad.output;
  // The file is in the source tree all the same: it is the include path that keeps it out.
  EXPECT_TRUE(fs::exists(test::source_path("lib/io/dataset.h")));
}
