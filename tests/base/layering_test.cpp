// The stages of lib/ depend on each other one way only (docs/architecture.md). This test reads every
// `#include "stage/..."` in lib/ and checks it against the declared graph below, which must itself
// be acyclic; a new stage folder must be declared here before it builds green.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace fs = std::filesystem;

namespace {

using Graph = std::map<std::string, std::set<std::string>>;

// What each stage may include besides itself; keep in step with docs/architecture.md.
const Graph& allowed() {
  static const Graph g = {
      {"core", {}},
      {"io", {"core"}},
      {"fingerprint", {"core", "io"}},
      {"planning", {"core"}},
      {"preprocessing", {"core", "io", "fingerprint", "planning"}},
      {"evaluation", {"core", "io"}},
      {"postprocessing", {"core", "io", "evaluation"}},
      {"selection", {"core", "io", "preprocessing", "evaluation", "postprocessing"}},
      {"visualization", {"core", "io", "postprocessing"}},
      {"data", {"core", "planning", "preprocessing", "postprocessing"}},
      {"models", {"core", "planning", "distributed"}},
      {"checkpoint", {"core"}},
      {"inference",
       {"core", "io", "fingerprint", "planning", "preprocessing", "postprocessing", "models", "checkpoint", "distributed",
        "visualization"}},
      {"distributed", {"core"}},
      {"sharing", {"core", "checkpoint", "inference"}},
      {"training",
       {"core", "io", "planning", "preprocessing", "evaluation", "data", "models", "checkpoint", "inference",
        "distributed"}},
      {"api", {"core", "io", "preprocessing", "postprocessing", "inference", "training"}},
  };
  return g;
}

// Stage -> the stages its files include, with one example file per edge for the message.
std::map<std::string, std::map<std::string, std::string>> actual_includes(const fs::path& lib) {
  static const std::regex include_re(R"re(^\s*#\s*include\s*"([a-z_]+)/)re");
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& e : fs::recursive_directory_iterator(lib)) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension();
    if (ext != ".h" && ext != ".cpp") continue;
    const std::string stage = fs::relative(e.path(), lib).begin()->string();
    std::ifstream in(e.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
      if (std::regex_search(line, m, include_re) && m[1] != stage)
        out[stage].emplace(m[1], fs::relative(e.path(), lib).string());
  }
  return out;
}

// Depth-first search for a cycle; returns it as "a -> b -> a", or "" when there is none.
std::string find_cycle(const Graph& g) {
  std::map<std::string, int> state;  // 0 unvisited, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::string cycle;
  std::function<bool(const std::string&)> visit = [&](const std::string& n) {
    state[n] = 1;
    stack.push_back(n);
    for (const auto& d : g.count(n) ? g.at(n) : std::set<std::string>{}) {
      if (state[d] == 1) {
        for (auto it = std::find(stack.begin(), stack.end(), d); it != stack.end(); ++it) cycle += *it + " -> ";
        cycle += d;
        return true;
      }
      if (state[d] == 0 && visit(d)) return true;
    }
    stack.pop_back();
    state[n] = 2;
    return false;
  };
  for (const auto& [n, deps] : g)
    if (state[n] == 0 && visit(n)) return cycle;
  return "";
}

}  // namespace

TEST(Layering, DeclaredStageGraphHasNoCycle) { EXPECT_EQ(find_cycle(allowed()), ""); }

TEST(Layering, CycleFinderSeesACycle) {
  EXPECT_EQ(find_cycle({{"a", {"b"}}, {"b", {"c"}}, {"c", {"a"}}}), "a -> b -> c -> a");
  EXPECT_EQ(find_cycle({{"a", {"b"}}, {"b", {}}}), "");
}

TEST(Layering, EveryStageFolderIsDeclared) {
  for (const auto& e : fs::directory_iterator(medseg::test::source_path("lib")))
    if (e.is_directory()) { EXPECT_TRUE(allowed().count(e.path().filename().string())) << e.path(); }
}

TEST(Layering, EveryIncludeFollowsTheDeclaredGraph) {
  const auto includes = actual_includes(medseg::test::source_path("lib"));
  ASSERT_FALSE(includes.empty());
  for (const auto& [stage, deps] : includes) {
    ASSERT_TRUE(allowed().count(stage)) << stage;
    for (const auto& [dep, example] : deps)
      EXPECT_TRUE(allowed().at(stage).count(dep)) << example << " (" << stage << ") includes " << dep
                                                  << "/, which docs/architecture.md does not allow";
  }
}
