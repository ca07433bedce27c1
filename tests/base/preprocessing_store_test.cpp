// The preprocessed-case store: .npy bytes checked by hand against numpy's format description,
// patch reads of hand-built arrays (in and out of bounds), errors for damaged files, and the
// class-location sampling rule with hand-computed counts.
#include <gtest/gtest.h>

#include <functional>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/json_io.h"
#include "preprocessing/case_store.h"
#include "preprocessing/class_locations.h"
#include "preprocessing/npy.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;
using namespace medseg::preprocessing;

namespace {

// Channel c, voxel (z, y, x) holds 1000 c + 100 z + 10 y + x; seg holds (z + y + x) % 3 - 1.
CaseArrays store_hand_case(int channels, const Shape3& s) {
  CaseArrays a;
  a.channels = channels;
  a.shape = s;
  for (int c = 0; c < channels; ++c)
    for (int64_t z = 0; z < s[0]; ++z)
      for (int64_t y = 0; y < s[1]; ++y)
        for (int64_t x = 0; x < s[2]; ++x) a.data.push_back(static_cast<float>(1000 * c + 100 * z + 10 * y + x));
  for (int64_t z = 0; z < s[0]; ++z)
    for (int64_t y = 0; y < s[1]; ++y)
      for (int64_t x = 0; x < s[2]; ++x) a.seg.push_back(static_cast<int16_t>((z + y + x) % 3 - 1));
  return a;
}

CaseProperties hand_props(const std::string& id, const Shape3& s) {
  CaseProperties p;
  p.id = id;
  p.original_shape = {s[0] + 2, s[1] + 1, s[2]};
  p.original_spacing = {3.0, 0.5, 0.5};
  p.original_geometry.spacing = {0.5, 0.5, 3.0};
  p.original_geometry.origin = {-10, 20, 5};
  p.transpose_forward = {0, 1, 2};
  p.shape_before_cropping = p.original_shape;
  p.bbox_used_for_cropping.lo = {1, 0, 0};
  p.bbox_used_for_cropping.hi = {1 + s[0], s[1], s[2]};
  p.shape_after_cropping_and_before_resampling = s;
  p.spacing_before_resampling = p.original_spacing;
  p.spacing_after_resampling = p.original_spacing;
  p.shape_after_resampling = s;
  p.class_locations = {{"1", {{0, 1, 2, 3}, {0, 0, 0, 2}}}, {"2", {}}};
  return p;
}

std::string bytes_of(const std::string& path) { return read_file(path); }

void truncate_file(const std::string& path, std::size_t keep) {
  const std::string b = bytes_of(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(keep));
}

std::string store_error_of(const std::string& folder, const std::string& id) {
  try {
    open_preprocessed_case(folder, id);
  } catch (const FileError& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(PreprocessingNpy, HeaderBytesFollowTheFormat) {
  test::TempDir dir("npy");
  const std::vector<float> v{1.5f, -2.0f, 0.0f, 4.0f, 5.0f, 6.0f};
  const std::string path = dir / "a.npy";
  write_npy(path, "<f4", {1, 1, 2, 3}, v.data(), v.size() * 4);
  const std::string b = bytes_of(path);
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>(b[0]), 0x93);
  EXPECT_EQ(b.substr(1, 5), "NUMPY");
  EXPECT_EQ(b[6], 1);  // version 1.0
  EXPECT_EQ(b[7], 0);
  const std::size_t header_len = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
  const std::size_t data_start = 10 + header_len;
  EXPECT_EQ(data_start % 64, 0u);
  const std::string dict = b.substr(10, header_len);
  EXPECT_EQ(dict.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 3), }", 0), 0u) << dict;
  EXPECT_EQ(dict.back(), '\n');
  EXPECT_EQ(dict.find_first_not_of(' ', dict.find('}') + 1), dict.size() - 1);  // spaces, then '\n'
  ASSERT_EQ(b.size(), data_start + 24);
  float first;
  std::memcpy(&first, b.data() + data_start, 4);
  EXPECT_EQ(first, 1.5f);  // little endian on the machines we support
  EXPECT_NE(npy_header("<i2", {5}).find("'shape': (5,), }"), std::string::npos);
  EXPECT_NE(npy_header("|i1", {}).find("'shape': (), }"), std::string::npos);

  const NpyHeader h = parse_npy_header(b.data(), b.size(), path);
  EXPECT_EQ(h.descr, "<f4");
  EXPECT_FALSE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{1, 1, 2, 3}));
  EXPECT_EQ(h.data_offset, data_start);
  EXPECT_EQ(h.item_size(), 4u);
}

TEST(PreprocessingNpy, ParsesNumpyVariants) {
  // numpy 2.0 headers (uint32 length), double quotes and odd spacing are valid Python too.
  std::string dict = "{\"shape\": (2,3),'fortran_order':True, 'descr':'|i1'}";
  std::string b = std::string("\x93NUMPY\x02\x00", 8);
  const uint32_t len = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < 4; ++i) b += static_cast<char>((len >> (8 * i)) & 0xff);
  b += dict;
  const NpyHeader h = parse_npy_header(b.data(), b.size(), "x.npy");
  EXPECT_EQ(h.descr, "|i1");
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.data_offset, 12 + dict.size());
  EXPECT_THROW(parse_npy_header("PK\x03\x04zipfile", 11, "x.npy"), FileError);
}

// Shapes whose element count does not fit 64 bits wrapped around before (found while writing the npy
// fuzz target, docs/hardening.md): (2^40)^3 counted as 0 voxels, so a 128-byte file passed the size check.
struct HugeShapeRow {
  const char* name;
  std::vector<int64_t> shape;
};

class PreprocessingNpyHugeShape : public ::testing::TestWithParam<HugeShapeRow> {};

TEST_P(PreprocessingNpyHugeShape, IsRefusedNamingTheFile) {
  const std::string h = npy_header("<f4", GetParam().shape);
  try {
    parse_npy_header(h.data(), h.size(), "big.npy");
    FAIL() << "accepted a header of shape " << h;
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), "big.npy");
    EXPECT_NE(std::string(e.what()).find("more than 2^56 elements"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, PreprocessingNpyHugeShape,
                         ::testing::Values(HugeShapeRow{"wraps_to_zero",
                                                        {1, int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40}},
                                           HugeShapeRow{"wraps_to_small", {3, int64_t{1} << 32, int64_t{1} << 32, 1}},
                                           HugeShapeRow{"just_over_2_56", {(int64_t{1} << 28) + 1, int64_t{1} << 28}}),
                         [](const auto& row) { return std::string(row.param.name); });

TEST(PreprocessingNpy, ItemSizesBeyondNumpysAreUnknownNotHuge) {
  NpyHeader h;
  for (const char* descr : {"<f99999999999999999", "<f-1", "<i32"}) {
    SCOPED_TRACE(descr);
    h.descr = descr;
    EXPECT_EQ(h.item_size(), 0u);
  }
  h.descr = "<f8";
  EXPECT_EQ(h.item_size(), 8u);
}

TEST(PreprocessingStore, CaseDeclaringMoreVoxelsThan64BitsHoldIsRefused) {
  // A hostile store: JSON and both headers agree on a (2^40)^3 grid, the files hold no voxels.
  test::TempDir dir("storehuge");
  const int64_t big = int64_t{1} << 40;
  const Shape3 s{2, 3, 4};
  CaseProperties p = hand_props("h", s);
  write_preprocessed_case(dir.path(), p, store_hand_case(1, s));
  p.shape_after_resampling = {big, big, big};
  write_json(dir / "h.json", case_properties_to_json(p));
  write_npy(dir / "h.npy", "<f4", {1, big, big, big}, nullptr, 0);
  write_npy(dir / "h_seg.npy", "|i1", {1, big, big, big}, nullptr, 0);
  const std::string e = store_error_of(dir.path(), "h");
  EXPECT_NE(e.find(dir / "h.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("more than 2^56 elements"), std::string::npos) << e;
}

TEST(PreprocessingStore, RoundTripAndPatchesWithPadding) {
  test::TempDir dir("store");
  const Shape3 s{2, 3, 4};
  const CaseArrays a = store_hand_case(2, s);
  write_preprocessed_case(dir.path(), hand_props("c1", s), a);
  const PreprocessedCase c = open_preprocessed_case(dir.path(), "c1");
  EXPECT_EQ(c.id(), "c1");
  EXPECT_EQ(c.num_channels(), 2);
  EXPECT_EQ(c.shape(), s);
  EXPECT_EQ(c.seg_dtype(), SegDType::Int8);
  EXPECT_EQ(c.channel(1)[0], 1000.0f);
  EXPECT_EQ(c.seg_at(1, 2, 3), (1 + 2 + 3) % 3 - 1);
  EXPECT_EQ(c.properties().original_geometry.origin, (std::array<double, 3>{-10, 20, 5}));
  ASSERT_EQ(c.properties().class_locations.size(), 2u);
  EXPECT_EQ(list_preprocessed_cases(dir.path()), std::vector<std::string>{"c1"});

  // Box z [-1, 1), y [1, 4), x [2, 6): z = -1 and y = 3 and x >= 4 are outside.
  Box box;
  box.lo = {-1, 1, 2};
  box.hi = {1, 4, 6};
  std::vector<float> patch(2 * box.numel(), 123.0f);
  read_patch(c, box, patch.data(), -7.0f);
  std::vector<int16_t> seg(box.numel(), 99);
  read_seg_patch(c, box, seg.data());
  int64_t i = 0;
  for (int ch = 0; ch < 2; ++ch)
    for (int64_t z = -1; z < 1; ++z)
      for (int64_t y = 1; y < 4; ++y)
        for (int64_t x = 2; x < 6; ++x, ++i) {
          const bool inside = z >= 0 && y < 3 && x < 4;
          EXPECT_EQ(patch[i], inside ? 1000 * ch + 100 * z + 10 * y + x : -7.0f) << ch << z << y << x;
          if (ch == 0) { EXPECT_EQ(seg[i], inside ? (z + y + x) % 3 - 1 : -1); }
        }
  // A box entirely outside is all padding.
  box.lo = {5, 5, 5};
  box.hi = {6, 7, 8};
  std::vector<float> far(2 * box.numel(), 0.0f);
  read_patch(c, box, far.data(), 3.0f);
  for (float v : far) EXPECT_EQ(v, 3.0f);
}

TEST(PreprocessingStore, LabelsAbove127AreStoredAsInt16) {
  test::TempDir dir("store16");
  const Shape3 s{1, 2, 2};
  CaseArrays a = store_hand_case(1, s);
  a.seg[3] = 200;
  write_preprocessed_case(dir.path(), hand_props("big", s), a);
  const std::string b = bytes_of(dir / "big_seg.npy");
  EXPECT_NE(b.find("'descr': '<i2'"), std::string::npos);
  const PreprocessedCase c = open_preprocessed_case(dir.path(), "big");
  ASSERT_EQ(c.seg_dtype(), SegDType::Int16);
  EXPECT_EQ(c.seg_int16()[3], 200);
  EXPECT_EQ(c.seg_int8(), nullptr);
}

TEST(PreprocessingStore, DamagedFilesAreErrorsNamingTheFile) {
  test::TempDir dir("storebad");
  const Shape3 s{2, 3, 4};
  write_preprocessed_case(dir.path(), hand_props("t", s), store_hand_case(1, s));
  const std::string npy = dir / "t.npy";
  truncate_file(npy, bytes_of(npy).size() - 5);
  std::string e = store_error_of(dir.path(), "t");
  EXPECT_NE(e.find(npy), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;

  write_preprocessed_case(dir.path(), hand_props("f", s), store_hand_case(1, s));
  std::ofstream(dir / "f_seg.npy", std::ios::trunc) << "this is not numpy";
  e = store_error_of(dir.path(), "f");
  EXPECT_NE(e.find(dir / "f_seg.npy"), std::string::npos) << e;

  write_preprocessed_case(dir.path(), hand_props("d", s), store_hand_case(1, s));
  const std::vector<double> d(24, 0.0);
  write_npy(dir / "d.npy", "<f8", {1, 2, 3, 4}, d.data(), d.size() * 8);
  e = store_error_of(dir.path(), "d");
  EXPECT_NE(e.find(dir / "d.npy"), std::string::npos) << e;

  write_preprocessed_case(dir.path(), hand_props("e", s), store_hand_case(1, s));
  std::ofstream(dir / "e.npy", std::ios::trunc).close();
  EXPECT_NE(store_error_of(dir.path(), "e").find("empty"), std::string::npos);

  EXPECT_NE(store_error_of(dir.path(), "missing").find("missing.json"), std::string::npos);
}

TEST(PreprocessingStore, PropertiesJsonRoundTripAndVersion) {
  const CaseProperties p = hand_props("x", {2, 3, 4});
  json j = case_properties_to_json(p);
  EXPECT_EQ(j["version"], kCasePropertiesVersion);
  EXPECT_EQ(j["bbox_used_for_cropping"], json::parse("[[1, 3], [0, 3], [0, 4]]"));
  const CaseProperties q = case_properties_from_json(j, "x.json");
  EXPECT_EQ(q.bbox_used_for_cropping, p.bbox_used_for_cropping);
  EXPECT_EQ(q.original_geometry, p.original_geometry);
  EXPECT_EQ(q.class_locations.at(0).locations, p.class_locations.at(0).locations);
  j["version"] = 99;
  EXPECT_THROW(case_properties_from_json(j, "x.json"), FileError);
}

// Found by fuzzing: a float too large for the integer it fills was cast (undefined behaviour, any
// value); it must be refused naming the file and the key.
TEST(PreprocessingStore, PropertiesFloatsBeyondIntegerRangeAreRefused) {
  const json good = case_properties_to_json(hand_props("x", {2, 3, 4}));
  const std::pair<const char*, std::function<void(json&)>> rows[] = {
      {"version", [](json& j) { j["version"] = 1e55; }},
      {"bbox_used_for_cropping", [](json& j) { j["bbox_used_for_cropping"][0][1] = 5e57; }},
  };
  for (const auto& [key, spoil] : rows) {
    SCOPED_TRACE(key);
    json j = good;
    spoil(j);
    try {
      case_properties_from_json(j, "x.json");
      ADD_FAILURE() << "accepted";
    } catch (const FileError& e) { EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what(); }
  }
}

TEST(PreprocessingClassLocations, CountsFollowTheMinMaxRule) {
  EXPECT_EQ(num_class_samples(5), 5);            // all of them
  EXPECT_EQ(num_class_samples(20000), 10000);    // capped at 10000 (1% = 200)
  EXPECT_EQ(num_class_samples(1500000), 15000);  // 1% = 15000 beats the cap
  EXPECT_EQ(num_class_samples(1000001), 10001);  // ceil(10000.01)

  // 1 x 1000 x 1500: label 2 everywhere but a 7-voxel label-1 row; label 3 absent.
  const Shape3 s{1, 1000, 1500};
  std::vector<int16_t> seg(1500000, 2);
  for (int x = 0; x < 7; ++x) seg[500 * 1500 + 100 + x] = 1;
  const std::vector<SamplingClass> classes{{"1", {1}}, {"2", {2}}, {"3", {3}}, {"1,2", {1, 2}}};
  const auto locs = sample_class_locations(seg.data(), s, classes);
  ASSERT_EQ(locs.size(), 4u);
  EXPECT_EQ(locs[0].locations.size(), 7u);
  EXPECT_EQ(locs[1].locations.size(), static_cast<std::size_t>(num_class_samples(1500000 - 7)));
  EXPECT_TRUE(locs[2].locations.empty());
  EXPECT_EQ(locs[3].locations.size(), 15000u);
  std::set<Location> seen;
  for (const Location& l : locs[1].locations) {
    EXPECT_EQ(l[0], 0);
    EXPECT_EQ(seg[(l[1] * 1000 + l[2]) * 1500 + l[3]], 2);
    seen.insert(l);
  }
  EXPECT_EQ(seen.size(), locs[1].locations.size());  // without replacement
  for (const Location& l : locs[0].locations) EXPECT_EQ(l[2], 500);
  // Seeded: the same call gives the same locations.
  EXPECT_EQ(sample_class_locations(seg.data(), s, classes)[1].locations, locs[1].locations);
}

TEST(PreprocessingClassLocations, ClassesFromLabelsRegionsAndIgnore) {
  io::DatasetInfo plain;
  plain.labels = {{"background", {0}}, {"a", {1}}, {"b", {2}}};
  auto c = sampling_classes(plain);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].key, "1");
  EXPECT_EQ(c[1].key, "2");
  plain.labels.push_back({"ignore", {3}});
  c = sampling_classes(plain);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[2].key, "0,1,2");
  io::DatasetInfo regions;
  regions.labels = {{"background", {0}}, {"whole", {1, 2, 3}}, {"core", {2, 3}}, {"enhancing", {3}}};
  c = sampling_classes(regions);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].key, "1,2,3");
  EXPECT_EQ(c[1].values, (std::vector<int>{2, 3}));
  EXPECT_EQ(c[2].key, "3");
}
