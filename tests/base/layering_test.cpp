// The stages of lib/ depend on each other one way only (docs/architecture.md). This test reads every
// `#include "stage/..."` in lib/ and checks it against the graph declared in lib/*/stage.cmake (which
// the build enforces through each stage's include path, cmake/MedsegStage.cmake, but transitively);
// here every include must be a direct edge, the graph must be acyclic, and docs/architecture.md's
// table must say the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace fs = std::filesystem;

namespace {

using Graph = std::map<std::string, std::set<std::string>>;

// What each stage may include besides itself: the DEPENDS and PRIVATE_DEPENDS of its lib/<stage>/stage.cmake,
// the declarations the build itself enforces (cmake/MedsegStage.cmake). A stage marked TORCH links
// core_torch publicly, so it may include core_torch too.
// `public_headers` gets each declaration's PUBLIC_HEADERS as "<folder>/<header>".
Graph read_declared(const fs::path& lib, std::set<std::string>* public_headers = nullptr) {
  static const std::set<std::string> keywords = {"TORCH", "DEPENDS",      "PRIVATE_DEPENDS",
                                                 "LIBS",  "PRIVATE_LIBS", "PUBLIC_HEADERS"};
  Graph g;
  for (const auto& e : fs::directory_iterator(lib)) {
    const fs::path decl = e.path() / "stage.cmake";
    if (!fs::exists(decl)) continue;
    std::ifstream in(decl);
    std::string word, key, folder = e.path().filename().string();
    g[folder];
    bool in_call = false;
    while (in >> word) {
      if (word[0] == '#') {
        std::getline(in, word);
        continue;
      }
      if (word.rfind("medseg_stage(", 0) == 0) {
        in_call = true;
        key.clear();
        continue;
      }
      if (!in_call) continue;
      const bool last = word.back() == ')';
      if (last) word.pop_back();
      if (word == "TORCH") g[folder].insert("core_torch");
      if (keywords.count(word))
        key = word;
      else if ((key == "DEPENDS" || key == "PRIVATE_DEPENDS") && word != folder)
        g[folder].insert(word);
      else if (key == "PUBLIC_HEADERS" && public_headers)
        public_headers->insert(folder + "/" + word);
      if (last) in_call = false;
    }
  }
  return g;
}

const Graph& allowed() {
  static const Graph g = read_declared(medseg::test::source_path("lib"));
  return g;
}

// docs/architecture.md's table: stage -> its "may include" column.
Graph documented(const fs::path& doc) {
  static const std::regex row_re(R"re(^\| `([a-z_]+)` \|.*\| ([a-z_, —-]+) \|\s*$)re");
  Graph g;
  std::ifstream in(doc);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_match(line, m, row_re)) continue;
    auto& deps = g[m[1]];
    std::stringstream list(m[2].str());
    std::string d;
    while (std::getline(list, d, ',')) {
      d.erase(0, d.find_first_not_of(' '));
      d.erase(d.find_last_not_of(' ') + 1);
      if (!d.empty() && d != "—") deps.insert(d);
    }
  }
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
    if (e.is_directory()) { EXPECT_TRUE(fs::exists(e.path() / "stage.cmake")) << e.path() << " has no stage.cmake"; }
}

TEST(Layering, EveryIncludeFollowsTheDeclaredGraph) {
  const auto includes = actual_includes(medseg::test::source_path("lib"));
  ASSERT_FALSE(includes.empty());
  for (const auto& [stage, deps] : includes) {
    ASSERT_TRUE(allowed().count(stage)) << stage;
    for (const auto& [dep, example] : deps)
      EXPECT_TRUE(allowed().at(stage).count(dep)) << example << " (" << stage << ") includes " << dep << "/, which "
                                                  << stage << "/stage.cmake does not declare";
  }
}

TEST(Layering, ArchitectureDocumentMatchesTheDeclarations) {
  const Graph doc = documented(medseg::test::source_path("docs/architecture.md"));
  ASSERT_GE(doc.size(), 10u);
  EXPECT_EQ(doc, allowed());
}

// The installed package ships each stage's PUBLIC_HEADERS only (CMakeLists.txt): a public header that includes
// a stage's own header would not compile for the program that links the package.
TEST(Layering, PublicHeadersIncludeOnlyPublicHeaders) {
  const fs::path lib = medseg::test::source_path("lib");
  std::set<std::string> pub;
  read_declared(lib, &pub);
  ASSERT_GE(pub.size(), 100u);
  EXPECT_TRUE(pub.count("api/segmenter.h"));
  EXPECT_FALSE(pub.count("planning/planner_internal.h"));  // the planners' own
  EXPECT_FALSE(pub.count("core_torch/torch_pch.h"));       // the build's precompiled header
  static const std::regex include_re(R"re(^\s*#\s*include\s*"([a-z_]+/[A-Za-z0-9_/]+\.h)")re");
  for (const std::string& h : pub) {
    ASSERT_TRUE(fs::exists(lib / h)) << h;
    std::ifstream in(lib / h);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (!std::regex_search(line, m, include_re)) continue;
      EXPECT_TRUE(pub.count(m[1])) << "lib/" << h << " is public and includes " << m[1]
                                   << ", which its stage.cmake does not list in PUBLIC_HEADERS";
    }
  }
}

TEST(Layering, DeclarationsAreRead) {
  // Hand-checked against lib/api/stage.cmake and lib/io/stage.cmake.
  EXPECT_EQ(allowed().at("api"),
            (std::set<std::string>{"core", "io", "postprocessing", "inference", "training", "sharing"}));
  EXPECT_EQ(allowed().at("io"), (std::set<std::string>{"core"}));
  EXPECT_TRUE(allowed().at("core").empty());
  // lib/checkpoint/stage.cmake: TORCH, DEPENDS core.
  EXPECT_EQ(allowed().at("checkpoint"), (std::set<std::string>{"core", "core_torch"}));
  EXPECT_EQ(allowed().at("core_torch"), (std::set<std::string>{"core"}));
}
