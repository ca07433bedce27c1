// medseg_plan_and_preprocess / medseg_preprocess on a tiny synthetic dataset (4 cases, 16x24x24,
// spacing 1 mm, so 3d_fullres does not resample). Checked against the raw files: the stored seg
// uncropped into the raw grid is the raw label, the stored image is the raw image z-scored, and
// every class location points at a voxel of its class.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/json_io.h"
#include "fingerprint/crop.h"
#include "io/image_io.h"
#include "preprocessing/case_store.h"
#include "support/test_support.h"
#include "support/output_lines.h"

namespace fs = std::filesystem;
using namespace medseg;
using namespace medseg::preprocessing;

using medseg::test::count_lines;

namespace {

struct Env {
  test::TempDir dir{"ppcli"};
  std::string env() const {
    return "MEDSEG_RAW=" + dir / "raw" + " MEDSEG_PREPROCESSED=" + dir / "pp" + " MEDSEG_NUM_THREADS=2";
  }
  std::string raw() const { return dir / "raw/Dataset901_Synthetic"; }
  std::string pp() const { return dir / "pp/Dataset901_Synthetic"; }
};

}  // namespace

TEST(PreprocessingCli, PlanAndPreprocessTinyDataset) {
  Env e;
  auto r =
      test::run_cli("medseg_make_dataset",
                    "-o " + e.dir / "raw" + " -d 901 --cases 4 --min-shape 16 24 24 --max-shape 16 24 24", e.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d 901 -c 3d_fullres -np 2 --no-progress", e.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"dataset_fingerprint.json", "nnUNetPlans.json", "dataset.json"})
    EXPECT_TRUE(fs::exists(fs::path(e.pp()) / f)) << f;
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(fs::exists(e.pp() + "/gt_segmentations/case_00" + std::to_string(i) + ".nii.gz"));
  const json plans = read_json(e.pp() + "/nnUNetPlans.json");
  const bool masked = plans["configurations"]["3d_fullres"]["use_mask_for_norm"][0].get<bool>();

  const std::string folder = e.pp() + "/nnUNetPlans_3d_fullres";
  const auto ids = list_preprocessed_cases(folder);
  ASSERT_EQ(ids.size(), 4u);
  for (const std::string& id : ids) {
    const PreprocessedCase c = open_preprocessed_case(folder, id);
    const CaseProperties& p = c.properties();
    ASSERT_EQ(c.shape(), p.shape_after_cropping_and_before_resampling);  // 1 mm -> 1 mm
    const Volume raw_label = io::read_label(e.raw() + "/labelsTr/" + id + ".nii.gz");
    const Volume raw_image = io::read_image(e.raw() + "/imagesTr/" + id + "_0000.nii.gz");
    EXPECT_EQ(p.original_shape, raw_label.shape());
    EXPECT_EQ(p.original_geometry, raw_image.geometry());

    // Crop-uncrop round trip: the stored seg (-1 -> 0) put back into the raw grid is the raw label.
    std::vector<int16_t> seg(static_cast<std::size_t>(c.voxels()));
    for (int64_t i = 0; i < c.voxels(); ++i) seg[i] = static_cast<int16_t>(std::max(0, int(c.seg_int8()[i])));
    std::vector<int16_t> full(static_cast<std::size_t>(raw_label.numel()), 0);
    fingerprint::uncrop_array(seg.data(), p.bbox_used_for_cropping, raw_label.shape(), full.data());
    const std::vector<double> want = raw_label.to_double();
    for (std::size_t i = 0; i < full.size(); ++i) ASSERT_EQ(full[i], want[i]) << id << " voxel " << i;

    // The stored image is a z-score of the raw crop: same voxel order, mean 0 and std 1 over the
    // normalized voxels, and a linear function of the raw values.
    double s = 0, ss = 0, n = 0;
    for (int64_t i = 0; i < c.voxels(); ++i)
      if (!masked || c.seg_int8()[i] >= 0) {
        s += c.data()[i];
        ss += double(c.data()[i]) * c.data()[i];
        ++n;
      }
    EXPECT_NEAR(s / n, 0.0, 1e-4);
    EXPECT_NEAR(std::sqrt(ss / n), 1.0, 1e-4);
    std::vector<float> raw_crop(static_cast<std::size_t>(c.voxels()));
    const std::vector<float> raw_values = raw_image.to_float();
    fingerprint::crop_array(raw_values.data(), raw_image.shape(), p.bbox_used_for_cropping, raw_crop.data());
    int64_t a = -1, b = -1;  // two normalized voxels with different raw values fix the linear map
    for (int64_t i = 0; i < c.voxels() && b < 0; ++i) {
      if (masked && c.seg_int8()[i] < 0) continue;
      if (a < 0)
        a = i;
      else if (raw_crop[i] != raw_crop[a])
        b = i;
    }
    ASSERT_GE(b, 0);
    const double scale = (c.data()[b] - c.data()[a]) / (double(raw_crop[b]) - raw_crop[a]);
    for (int64_t i = 0; i < c.voxels(); ++i)
      if (!masked || c.seg_int8()[i] >= 0) {
        ASSERT_NEAR(c.data()[i], c.data()[a] + scale * (raw_crop[i] - raw_crop[a]), 1e-3);
      }

    for (const ClassLocations& cl : p.class_locations)
      for (const Location& l : cl.locations) ASSERT_EQ(std::to_string(c.seg_at(l[1], l[2], l[3])), cl.key);
  }

  // medseg_preprocess alone redoes the configuration; unknown plans / configurations are one line.
  r = test::run_cli("medseg_preprocess", "-d 901 -c 3d_fullres -np 1 --no-progress", e.env());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(list_preprocessed_cases(folder).size(), 4u);
  r = test::run_cli("medseg_preprocess", "-d 901 -plans_name NoSuchPlans", e.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("NoSuchPlans.json"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  r = test::run_cli("medseg_preprocess", "-d 901 -c 3d_bogus", e.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("nnUNetPlans.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3d_bogus"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;

  // A truncated image is an error naming that file.
  const std::string victim = e.raw() + "/imagesTr/case_002_0000.nii.gz";
  const std::string bytes = read_file(victim);
  std::ofstream(victim, std::ios::binary | std::ios::trunc).write(bytes.data(), 200);
  r = test::run_cli("medseg_preprocess", "-d 901 -c 3d_fullres --no-progress", e.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("case_002_0000.nii.gz"), std::string::npos) << r.output;
}

// Issue 26: plans that share a data_identifier share the folder; preprocessing another plans into it
// at another spacing would change the data under the first plans' models, and is refused naming the
// folder. The same spacing and normalization (the ResEnc presets' case) is allowed.
TEST(PreprocessingCli, AnotherPlansAtAnotherSpacingDoesNotRewriteSharedData) {
  Env e;
  auto r = test::run_cli("medseg_make_dataset",
                         "-o " + e.dir / "raw" + " -d 901 --cases 2 --min-shape 8 12 12 --max-shape 8 12 12", e.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d 901 -c 3d_fullres -np 1 --no-progress", e.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json plans = read_json(e.pp() + "/nnUNetPlans.json");
  plans["plans_name"] = "OtherPlans";  // 3d_fullres keeps data_identifier nnUNetPlans_3d_fullres
  write_json(e.pp() + "/OtherPlans.json", plans);
  const std::string folder = e.pp() + "/nnUNetPlans_3d_fullres";

  r = test::run_cli("medseg_preprocess", "-d 901 -plans_name OtherPlans -c 3d_fullres -np 1 --no-progress", e.env());
  EXPECT_EQ(r.exit_code, 0) << r.output;  // same spacing and normalization: the same data

  plans["plans_name"] = "CoarsePlans";
  plans["configurations"]["3d_fullres"]["spacing"] = {2.0, 2.0, 2.0};
  write_json(e.pp() + "/CoarsePlans.json", plans);
  const auto before = test::folder_snapshot(folder);
  r = test::run_cli("medseg_preprocess", "-d 901 -plans_name CoarsePlans -c 3d_fullres -np 1 --no-progress", e.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find(folder + ": holds the data of plans 'OtherPlans' configuration '3d_fullres' (spacing ["),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("give 'CoarsePlans' its own data_identifier"), std::string::npos) << r.output;
  EXPECT_EQ(test::folder_snapshot(folder), before);
}
