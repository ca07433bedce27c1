// The planner against plans files written by nnU-Net v2 itself. tests/data/planning/nnunet/make_golden.py
// ran nnU-Net's own ExperimentPlanner and ResEnc M/L/XL planners (commit named there) on each
// dataset's dataset.json and dataset_fingerprint.json, stored beside the plans it saved; medseg plans
// from the same two files and must write the same bytes (key order, indent, number spelling).
#include <gtest/gtest.h>

#include <ostream>
#include <sstream>

#include "planning/planner.h"
#include "planning/planner_inputs.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::planning;

namespace {

struct GoldenRow {
  std::string dataset;  // folder under tests/data/planning/nnunet
  std::string planner;
  std::string plans;  // nnU-Net's file, relative to tests/data/planning
};

void PrintTo(const GoldenRow& r, std::ostream* os) { *os << r.dataset << " " << r.planner; }

std::string row_name(const ::testing::TestParamInfo<GoldenRow>& i) {
  std::string n = i.param.dataset.substr(i.param.dataset.find('_') + 1) + "_" + i.param.planner;
  for (char& ch : n)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

std::string planning_data(const std::string& rel) { return test::source_path("tests/data/planning/" + rel); }

// The first differing line with its number, so that a failure says what nnU-Net wrote instead.
std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "identical";
    if (la != lb || more_a != more_b)
      return "line " + std::to_string(line) + ": nnU-Net '" + (more_a ? la : "<end>") + "', medseg '" +
             (more_b ? lb : "<end>") + "'";
  }
}

class PlanningNnunetGolden : public ::testing::TestWithParam<GoldenRow> {};

}  // namespace

TEST_P(PlanningNnunetGolden, PlannerWritesNnunetsFileByteForByte) {
  const GoldenRow& row = GetParam();
  const std::string dir = "nnunet/" + row.dataset + "/";
  const FingerprintInput fp = load_fingerprint(planning_data(dir + "dataset_fingerprint.json"));
  const DatasetJsonInput ds = load_dataset_json(planning_data(dir + "dataset.json"));
  std::string expected = read_file(planning_data(row.plans));
  while (!expected.empty() && expected.back() == '\n') expected.pop_back();  // nnU-Net writes none; tolerate one

  PlannerOptions o;
  o.planner = row.planner;
  o.dataset_name = row.dataset;
  o.annotate_memory = false;
  const std::string got = plan_experiment(fp, ds, o).dump(4);
  EXPECT_TRUE(got == expected) << first_difference(expected, got);

  // medseg's own memory annotation is the only addition, and removing it gives nnU-Net's file again.
  o.annotate_memory = true;
  ordered_json annotated = plan_experiment(fp, ds, o);
  for (auto& [name, c] : annotated["configurations"].items()) {
    if (c.contains("inherits_from") && !c.contains("patch_size")) continue;  // 3d_cascade_fullres
    ASSERT_TRUE(c.contains("medseg")) << name;
    c.erase("medseg");
  }
  EXPECT_TRUE(annotated.dump(4) == expected) << first_difference(expected, annotated.dump(4));
}

INSTANTIATE_TEST_SUITE_P(
    NnunetPlans, PlanningNnunetGolden,
    ::testing::Values(
        // MSD Hippocampus (1 mm, 36x50x35, 260 cases, 3 labels): 2d and 3d_fullres only.
        GoldenRow{"Dataset004_Hippocampus", "ExperimentPlanner", "nnUNetPlans_hippocampus.json"},
        GoldenRow{"Dataset004_Hippocampus", "nnUNetPlannerResEncM",
                  "nnunet/Dataset004_Hippocampus/nnUNetResEncUNetMPlans.json"},
        GoldenRow{"Dataset004_Hippocampus", "nnUNetPlannerResEncL",
                  "nnunet/Dataset004_Hippocampus/nnUNetResEncUNetLPlans.json"},
        GoldenRow{"Dataset004_Hippocampus", "nnUNetPlannerResEncXL",
                  "nnunet/Dataset004_Hippocampus/nnUNetResEncUNetXLPlans.json"},
        // Anisotropic CT, thick axis last: transpose, CT normalization, 3d_lowres and the cascade.
        GoldenRow{"Dataset950_AnisoCT", "ExperimentPlanner", "nnunet/Dataset950_AnisoCT/nnUNetPlans.json"},
        GoldenRow{"Dataset950_AnisoCT", "nnUNetPlannerResEncM",
                  "nnunet/Dataset950_AnisoCT/nnUNetResEncUNetMPlans.json"},
        // Two channels (ZScore within the mask, noNorm), varied shapes, odd case count.
        GoldenRow{"Dataset951_TwoChannelMRI", "ExperimentPlanner", "nnunet/Dataset951_TwoChannelMRI/nnUNetPlans.json"},
        GoldenRow{"Dataset951_TwoChannelMRI", "nnUNetPlannerResEncL",
                  "nnunet/Dataset951_TwoChannelMRI/nnUNetResEncUNetLPlans.json"}),
    row_name);
