// medseg_extract_fingerprint end to end on a tiny hand-built dataset whose statistics are worked
// out by hand, and its error reporting for broken datasets.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

int64_t idx(const std::array<int64_t, 3>& s, int64_t z, int64_t y, int64_t x) { return (z * s[1] + y) * s[2] + x; }

// Dataset001_Tiny, two channels (channel 1 = 10 x channel 0), two cases:
//  case_a: shape (4,5,6), spacing x,y,z = 0.5,0.75,2; body [1,3)x[1,4)x[1,5) of value 1;
//          foreground voxels with channel-0 values 2, 4, 6. Cropped to (2,3,4): relative size 0.2.
//  case_b: shape (3,3,3), spacing 1; all nonzero (no crop, relative size 1); foreground 8, 10.
// Exact statistics over {2,4,6,8,10} (x10 for channel 1): mean 6, median 6, std sqrt(8),
// p0.5 = 2 + 2*0.02 = 2.04, p99.5 = 8 + 2*0.98 = 9.96.
struct TinyDataset {
  test::TempDir root{"fpcli"};
  std::string raw = root / "raw", pre = root / "pre";
  std::string folder = raw + "/Dataset001_Tiny";

  TinyDataset() {
    fs::create_directories(folder + "/imagesTr");
    fs::create_directories(folder + "/labelsTr");
    json ds = {{"channel_names", {{"0", "A"}, {"1", "B"}}},
               {"labels", {{"background", 0}, {"x", 1}, {"y", 2}}},
               {"numTraining", 2},
               {"file_ending", ".nii.gz"}};
    write_json(folder + "/dataset.json", ds);
    write_case_a();
    write_case_b();
  }
  void write_case(const std::string& id, const Volume& ch0, const Volume& seg, const Geometry* ch1_geom = nullptr) {
    std::vector<double> v1 = ch0.to_double();
    for (double& x : v1) x *= 10;
    io::write_image(folder + "/imagesTr/" + id + "_0000.nii.gz", ch0);
    io::write_image(folder + "/imagesTr/" + id + "_0001.nii.gz",
                    Volume::from_values(PixelType::Float32, ch0.shape(), ch1_geom ? *ch1_geom : ch0.geometry(), v1));
    io::write_image(folder + "/labelsTr/" + id + ".nii.gz", seg);
  }
  void write_case_a() {
    const std::array<int64_t, 3> s{4, 5, 6};
    Geometry g;
    g.spacing = {0.5, 0.75, 2.0};
    Volume ch(PixelType::Float32, s, g), seg(PixelType::UInt8, s, g);
    for (int64_t z = 1; z < 3; ++z)
      for (int64_t y = 1; y < 4; ++y)
        for (int64_t x = 1; x < 5; ++x) ch.data<float>()[idx(s, z, y, x)] = 1;
    const int64_t fg[3][3] = {{1, 1, 1}, {1, 1, 2}, {2, 3, 4}};
    for (int k = 0; k < 3; ++k) {
      ch.data<float>()[idx(s, fg[k][0], fg[k][1], fg[k][2])] = 2.0f * (k + 1);
      seg.data<uint8_t>()[idx(s, fg[k][0], fg[k][1], fg[k][2])] = k == 2 ? 2 : 1;
    }
    write_case("case_a", ch, seg);
  }
  void write_case_b(const Geometry* ch1_geom = nullptr) {
    const std::array<int64_t, 3> s{3, 3, 3};
    Volume ch = Volume::from_values(PixelType::Float32, s, {}, std::vector<double>(27, 1.0));
    Volume seg(PixelType::UInt8, s);
    ch.data<float>()[0] = 8;
    ch.data<float>()[26] = 10;
    seg.data<uint8_t>()[0] = 1;
    seg.data<uint8_t>()[26] = 1;
    write_case("case_b", ch, seg, ch1_geom);
  }
  std::string env() const { return "MEDSEG_RAW=" + raw + " MEDSEG_PREPROCESSED=" + pre; }
  std::string default_output() const { return pre + "/Dataset001_Tiny/dataset_fingerprint.json"; }
};

}  // namespace

TEST(FingerprintCli, ExactStatsMatchHandComputed) {
  TinyDataset d;
  const std::string out = d.root / "fp.json";
  auto r = test::run_cli("medseg_extract_fingerprint",
                         "--raw-folder " + d.folder + " -o " + out + " --exact-stats -np 2 --no-progress");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = read_json(out);
  const json& c0 = j["foreground_intensity_properties_per_channel"]["0"];
  EXPECT_NEAR(c0["mean"].get<double>(), 6.0, 1e-12);
  EXPECT_NEAR(c0["median"].get<double>(), 6.0, 1e-12);
  EXPECT_NEAR(c0["std"].get<double>(), std::sqrt(8.0), 1e-12);
  EXPECT_NEAR(c0["min"].get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(c0["max"].get<double>(), 10.0, 1e-12);
  EXPECT_NEAR(c0["percentile_00_5"].get<double>(), 2.04, 1e-12);
  EXPECT_NEAR(c0["percentile_99_5"].get<double>(), 9.96, 1e-12);
  const json& c1 = j["foreground_intensity_properties_per_channel"]["1"];
  EXPECT_NEAR(c1["mean"].get<double>(), 60.0, 1e-10);
  EXPECT_NEAR(c1["std"].get<double>(), std::sqrt(800.0), 1e-10);
  EXPECT_NEAR(c1["percentile_00_5"].get<double>(), 20.4, 1e-10);
  EXPECT_NEAR(c1["percentile_99_5"].get<double>(), 99.6, 1e-10);
  EXPECT_NEAR(j["median_relative_size_after_cropping"].get<double>(), 0.6, 1e-12);  // median(0.2, 1)
  EXPECT_EQ(j["shapes_after_crop"], (json{{2, 3, 4}, {3, 3, 3}}));
  EXPECT_EQ(j["spacings"], (json{{2.0, 0.75, 0.5}, {1.0, 1.0, 1.0}}));
  EXPECT_EQ(j["medseg"]["cases"][0]["id"], "case_a");
  EXPECT_EQ(j["medseg"]["cases"][0]["shape_before_crop"], (json{4, 5, 6}));
  EXPECT_EQ(j["medseg"]["exact_stats"], true);
}

TEST(FingerprintCli, SampledStatsByDatasetIdUnderPreprocessed) {
  TinyDataset d;
  auto r = test::run_cli("medseg_extract_fingerprint", "-d 1 --max-samples-total 20000 --no-progress", d.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = read_json(d.default_output());
  EXPECT_EQ(j["medseg"]["samples_per_case"], 10000);
  // Each case gives the same number of samples: mean = (mean{2,4,6} + mean{8,10}) / 2 = 6.5
  // (standard error about 0.01).
  const json& c0 = j["foreground_intensity_properties_per_channel"]["0"];
  EXPECT_NEAR(c0["mean"].get<double>(), 6.5, 0.1);
  EXPECT_DOUBLE_EQ(c0["min"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(c0["max"].get<double>(), 10.0);
}

TEST(FingerprintCli, ExistingKeptUnlessClean) {
  TinyDataset d;
  fs::create_directories(d.pre + "/Dataset001_Tiny");
  const std::string fixture = test::source_path("tests/data/fingerprint_nnunet_v2.json");
  fs::copy_file(fixture, d.default_output());
  auto r = test::run_cli("medseg_extract_fingerprint", "-d Tiny --no-progress", d.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kept"), std::string::npos) << r.output;
  EXPECT_EQ(read_json(d.default_output())["shapes_after_crop"].size(), 3u);  // untouched
  r = test::run_cli("medseg_extract_fingerprint", "-d Tiny --clean --max-samples-total 100 --no-progress", d.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_json(d.default_output())["shapes_after_crop"].size(), 2u);
}

TEST(FingerprintCli, VerifyDatasetIntegrityPasses) {
  TinyDataset d;
  auto r = test::run_cli("medseg_extract_fingerprint",
                         "-d 1 --verify_dataset_integrity --max-samples-total 100 --no-progress", d.env());
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(FingerprintCli, MissingChannelIsOneClearError) {
  TinyDataset d;
  fs::remove(d.folder + "/imagesTr/case_b_0001.nii.gz");
  auto r = test::run_cli("medseg_extract_fingerprint", "-d 1 --no-progress", d.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("case_b_0001.nii.gz"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d.default_output()));
}

TEST(FingerprintCli, MismatchedGeometryNamesTheFile) {
  TinyDataset d;
  Geometry other;
  other.spacing = {2.0, 1.0, 1.0};
  d.write_case_b(&other);
  auto r = test::run_cli("medseg_extract_fingerprint", "-d 1 --no-progress --np 1 --max-samples-total 100", d.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("case_b_0001.nii.gz"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d.default_output()));
}

TEST(FingerprintCli, CorruptFileNamesTheFile) {
  TinyDataset d;
  std::ofstream(d.folder + "/imagesTr/case_a_0000.nii.gz", std::ios::binary) << "definitely not a nifti file";
  auto r = test::run_cli("medseg_extract_fingerprint", "-d 1 --no-progress", d.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("case_a_0000.nii.gz"), std::string::npos) << r.output;
}

TEST(FingerprintCli, VerifyRejectsUndeclaredLabel) {
  TinyDataset d;
  Volume seg(PixelType::UInt8, {3, 3, 3});
  seg.data<uint8_t>()[0] = 7;  // dataset.json declares 0..2
  io::write_image(d.folder + "/labelsTr/case_b.nii.gz", seg);
  auto r = test::run_cli("medseg_extract_fingerprint", "-d 1 --verify_dataset_integrity --no-progress", d.env());
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("case_b"), std::string::npos) << r.output;
}

// Issue 42: -o naming a file of the dataset (its dataset.json) replaced it with the fingerprint.
TEST(FingerprintCli, AnOutputInsideTheDatasetIsRefused) {
  TinyDataset d;
  const std::string dj = d.folder + "/dataset.json", before = test::read_text(dj);
  const auto r = test::run_cli("medseg_extract_fingerprint", "-d 1 --no-progress --clean -o " + dj, d.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(dj + ": lies inside the dataset folder"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_text(dj), before);
}
