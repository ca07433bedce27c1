// dataset_fingerprint.json: nnU-Net's keys and order, our extras under "medseg" only, and reading a
// file written the way nnU-Net writes it (tests/data/fingerprint_nnunet_v2.json: Python json.dump
// with sort_keys=True, indent=4).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/json_io.h"
#include "fingerprint/fingerprint.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::fingerprint;

namespace {

// tests/data/<name> (the source dir is compiled into the tests; __FILE__ is relative under ccache).
std::string fixture(const std::string& name) { return test::source_path("tests/data/" + name); }

DatasetFingerprint small_fingerprint() {
  DatasetFingerprint fp;
  IntensityStats s;
  s.mean = 6, s.median = 6, s.std = std::sqrt(8.0), s.min = 2, s.max = 10;
  s.percentile_00_5 = 2.04, s.percentile_99_5 = 9.96;
  fp.intensity_per_channel = {s, s};
  fp.median_relative_size_after_cropping = 0.6;
  fp.shapes_after_crop = {{2, 3, 4}, {3, 3, 3}};
  fp.spacings = {{2.0, 0.75, 0.5}, {1, 1, 1}};
  fp.has_medseg = true;
  CaseRecord r;
  r.id = "case_a";
  r.shape_before_crop = {4, 5, 6};
  r.bbox.lo = {1, 1, 1};
  r.bbox.hi = {3, 4, 5};
  r.relative_size_after_cropping = 0.2;
  r.num_foreground_voxels = 0;
  r.stats = {IntensityStats{}};  // no foreground: NaN -> null
  fp.cases = {r};
  return fp;
}

}  // namespace

TEST(FingerprintJson, KeysInNnUNetOrder) {
  const std::string text = fingerprint_to_json(small_fingerprint()).dump(4);
  const char* top[] = {"\"foreground_intensity_properties_per_channel\"", "\"median_relative_size_after_cropping\"",
                       "\"medseg\"", "\"shapes_after_crop\"", "\"spacings\""};
  std::size_t prev = 0;
  for (const char* k : top) {
    const auto at = text.find(k);
    ASSERT_NE(at, std::string::npos) << k;
    EXPECT_GT(at, prev) << k;
    prev = at;
  }
  const char* stat[] = {"\"max\"", "\"mean\"", "\"median\"", "\"min\"", "\"percentile_00_5\"", "\"percentile_99_5\"",
                        "\"std\""};
  prev = text.find("\"0\"");
  for (const char* k : stat) {
    const auto at = text.find(k, prev);
    EXPECT_GT(at, prev) << k;
    prev = at;
  }
  EXPECT_LT(text.find("\"std\""), text.find("\"1\""));
}

TEST(FingerprintJson, ValuesAndAxisOrder) {
  const auto j = fingerprint_to_json(small_fingerprint());
  EXPECT_EQ(j["shapes_after_crop"][0], (nlohmann::ordered_json{2, 3, 4}));
  EXPECT_EQ(j["spacings"][0], (nlohmann::ordered_json{2.0, 0.75, 0.5}));
  EXPECT_DOUBLE_EQ(j["foreground_intensity_properties_per_channel"]["1"]["percentile_99_5"].get<double>(), 9.96);
  EXPECT_EQ(j["medseg"]["cases"][0]["bbox"], (nlohmann::ordered_json{{1, 3}, {1, 4}, {1, 5}}));
  EXPECT_TRUE(j["medseg"]["cases"][0]["foreground_intensity_stats_per_channel"][0]["mean"].is_null());
}

TEST(FingerprintJson, RoundTrip) {
  test::TempDir d("fpjson");
  save_fingerprint(d / "fp.json", small_fingerprint());
  const DatasetFingerprint fp = load_fingerprint(d / "fp.json");
  ASSERT_EQ(fp.num_channels(), 2);
  EXPECT_DOUBLE_EQ(fp.intensity_per_channel[1].std, std::sqrt(8.0));
  EXPECT_EQ(fp.shapes_after_crop[1], (Shape3{3, 3, 3}));
  EXPECT_DOUBLE_EQ(fp.spacings[0][1], 0.75);
  EXPECT_TRUE(fp.has_medseg);
  ASSERT_EQ(fp.cases.size(), 1u);
  EXPECT_EQ(fp.cases[0].id, "case_a");
  EXPECT_EQ(fp.cases[0].bbox.hi, (Shape3{3, 4, 5}));
  EXPECT_TRUE(std::isnan(fp.cases[0].stats[0].mean));
}

TEST(FingerprintJson, ReadsNnUNetFile) {
  const DatasetFingerprint fp = load_fingerprint(fixture("fingerprint_nnunet_v2.json"));
  EXPECT_FALSE(fp.has_medseg);
  ASSERT_EQ(fp.num_channels(), 2);
  EXPECT_DOUBLE_EQ(fp.intensity_per_channel[0].mean, 86.0);
  EXPECT_DOUBLE_EQ(fp.intensity_per_channel[0].percentile_99_5, 155.0);
  EXPECT_DOUBLE_EQ(fp.intensity_per_channel[1].percentile_00_5, -2.75);
  EXPECT_DOUBLE_EQ(fp.intensity_per_channel[1].std, 1.125);
  EXPECT_DOUBLE_EQ(fp.median_relative_size_after_cropping, 1.0);
  ASSERT_EQ(fp.shapes_after_crop.size(), 3u);
  EXPECT_EQ(fp.shapes_after_crop[2], (Shape3{20, 320, 319}));
  EXPECT_DOUBLE_EQ(fp.spacings[2][0], 3.0);
  EXPECT_DOUBLE_EQ(fp.spacings[2][2], 0.625);
}

TEST(FingerprintJson, OurFileHasNnUNetKeysOnlyOutsideMedseg) {
  const auto j = fingerprint_to_json(small_fingerprint());
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"foreground_intensity_properties_per_channel",
                                            "median_relative_size_after_cropping", "medseg", "shapes_after_crop",
                                            "spacings"}));
  DatasetFingerprint plain = small_fingerprint();
  plain.has_medseg = false;
  EXPECT_FALSE(fingerprint_to_json(plain).contains("medseg"));
}

// Found by fuzzing: 5e57 as a shape was cast into int64 (undefined behaviour, any value).
TEST(FingerprintJson, FloatsBeyondIntegerRangeAreRefused) {
  test::TempDir d("fpjson_range");
  save_fingerprint(d / "fp.json", small_fingerprint());
  json j = read_json(d / "fp.json");
  j["shapes_after_crop"][0][1] = 5e57;
  try {
    fingerprint_from_json(j, "x.json");
    ADD_FAILURE() << "accepted";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'shapes_after_crop'[0][1] is 5e+57 (expected an integer"),
              std::string::npos)
        << e.what();
  }
}

TEST(FingerprintJson, ErrorsNameFileAndKey) {
  json j = json::parse(fingerprint_to_json(small_fingerprint()).dump());
  j.erase("spacings");
  try {
    fingerprint_from_json(j, "x.json");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("x.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("spacings"), std::string::npos);
  }
  json k = json::parse(fingerprint_to_json(small_fingerprint()).dump());
  k["foreground_intensity_properties_per_channel"]["1"].erase("std");
  EXPECT_THROW(fingerprint_from_json(k, "x.json"), FileError);
  json m = json::parse(fingerprint_to_json(small_fingerprint()).dump());
  m["shapes_after_crop"][0] = json{1, 2};
  EXPECT_THROW(fingerprint_from_json(m, "x.json"), FileError);
  test::TempDir d("fpjson");
  write_file_atomic(d / "bad.json", "{\"spacings\": [");
  EXPECT_THROW(load_fingerprint(d / "bad.json"), FileError);
}
