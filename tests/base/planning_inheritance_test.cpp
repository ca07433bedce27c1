// planning::resolve_configuration, the one `inherits_from` resolver (plans_from_json and
// models::plan_network_spec both use it): nnU-Net PlansManager's rule, a shallow update where the
// child's keys win, applied along the whole chain; bad chains are refused naming the file.
#include <gtest/gtest.h>

#include "core/error.h"
#include "plans/plans.h"

using namespace medseg;
using nlohmann::json;

namespace {

const json kConfigs = json::parse(R"({
  "base":   {"x": 1, "y": 1, "z": 1, "architecture": {"k": 1, "m": 2}},
  "mid":    {"inherits_from": "base", "y": 2},
  "leaf":   {"inherits_from": "mid", "z": 3, "architecture": {"k": 5}},
  "orphan": {"inherits_from": "missing"},
  "self":   {"inherits_from": "self"},
  "ping":   {"inherits_from": "pong"},
  "pong":   {"inherits_from": "ping"},
  "number": {"inherits_from": 7},
  "list":   [1, 2]
})");

}  // namespace

TEST(PlanningInheritance, ChainsMergeShallowlyChildKeysWin) {
  struct Row {
    const char* name;
    json expected;
  };
  const Row rows[] = {
      {"base", kConfigs.at("base")},
      {"mid", json::parse(R"({"x": 1, "y": 2, "z": 1, "architecture": {"k": 1, "m": 2}, "inherits_from": "base"})")},
      // Two levels; "architecture" is replaced whole (no deep merge, as Python's dict.update).
      {"leaf", json::parse(R"({"x": 1, "y": 2, "z": 3, "architecture": {"k": 5}, "inherits_from": "mid"})")},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(planning::resolve_configuration(kConfigs, r.name, "plans.json"), r.expected);
  }
}

TEST(PlanningInheritance, BadChainsAreRefusedNamingTheFile) {
  const std::pair<const char*, const char*> rows[] = {
      {"nowhere", "'nowhere' does not exist"},
      {"orphan", "'missing' does not exist"},
      {"self", "circular inherits_from"},
      {"ping", "circular inherits_from"},
      {"number", "'inherits_from' is 7 (expected a string)"},
      {"list", "'list' is not an object"},
  };
  for (const auto& [name, problem] : rows) {
    SCOPED_TRACE(name);
    try {
      planning::resolve_configuration(kConfigs, name, "p/plans.json");
      ADD_FAILURE() << "resolved";
    } catch (const FileError& e) {
      EXPECT_EQ(e.path(), "p/plans.json");
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    }
  }
}
