// The CaseSource adapter over the preprocessed case store: a hand-built case written with
// write_preprocessed_case reads back through PreprocessedCaseSource with the same values, padding,
// and class locations (channel index dropped, regions mapped to 1000 + position).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <unistd.h>

#include <filesystem>

#include "data/data_loader.h"
#include "data/preprocessed_source.h"
#include "plans/plans.h"

using namespace medseg;
using namespace medseg::data;
namespace fs = std::filesystem;

namespace {

struct ScratchDir {
  fs::path path;
  ScratchDir() {
    path = fs::temp_directory_path() / ("medseg_data_store_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

void write_case(const std::string& folder, const std::string& id, const Shape3& shape) {
  preprocessing::CaseProperties p;
  p.id = id;
  p.original_shape = p.shape_before_cropping = shape;
  p.shape_after_cropping_and_before_resampling = p.shape_after_resampling = shape;
  p.bbox_used_for_cropping.hi = shape;
  preprocessing::CaseArrays a;
  a.channels = 2;
  a.shape = shape;
  const int64_t n = shape[0] * shape[1] * shape[2];
  for (int64_t i = 0; i < 2 * n; ++i) a.data.push_back(static_cast<float>(i + 1));
  a.seg.assign(static_cast<size_t>(n), 0);
  a.seg[5] = 1;
  a.seg[static_cast<size_t>(n - 1)] = 2;
  a.seg[0] = -1;
  const preprocessing::Location last{0, shape[0] - 1, shape[1] - 1, shape[2] - 1};
  p.class_locations = {{"1", {{0, 0, 0, 5}}}, {"2", {}}, {"1,2", {{0, 0, 0, 5}, last}}};
  preprocessing::write_preprocessed_case(folder, p, a);
}

}  // namespace

TEST(DataStore, ReadsValuesPaddingAndLocations) {
  ScratchDir dir;
  write_case(dir.path.string(), "b", {3, 4, 6});
  write_case(dir.path.string(), "a", {2, 4, 6});
  PreprocessedCaseSource src(dir.path.string());
  ASSERT_EQ(src.size(), 2);
  EXPECT_EQ(src.id(0), "a");  // sorted
  EXPECT_EQ(src.channels(), 2);
  EXPECT_EQ(src.shape(1), (Shape3{3, 4, 6}));
  const auto& locs = src.class_locations(1);
  ASSERT_EQ(locs.size(), 3u);
  EXPECT_EQ(locs.at(1), (std::vector<Shape3>{{0, 0, 5}}));
  EXPECT_TRUE(locs.at(2).empty());
  // The region "1,2" is the second class in key order ("1", "1,2", "2": a JSON object).
  EXPECT_EQ(locs.at(1001).size(), 2u);
  EXPECT_EQ(locs.at(1001)[1], (Shape3{2, 3, 5}));

  // Box z -1..0, y 0..1, x 4..7 of case "b" (3 x 4 x 6, values 1.. in raster order per channel).
  Box box{{-1, 0, 4}, {1, 2, 8}};
  std::vector<float> d(static_cast<size_t>(2 * box.numel()));
  std::vector<int16_t> s(static_cast<size_t>(box.numel()));
  src.read_data(1, box, d.data(), 0.f);
  src.read_seg(1, box, s.data(), -1);
  const int64_t n = 3 * 4 * 6;
  size_t o = 0;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t z = -1; z < 1; ++z)
      for (int64_t y = 0; y < 2; ++y)
        for (int64_t x = 4; x < 8; ++x, ++o) {
          const bool inside = z >= 0 && x < 6;
          const int64_t v = (z * 4 + y) * 6 + x;
          EXPECT_EQ(d[o], inside ? static_cast<float>(c * n + v + 1) : 0.f);
          if (c == 0) { EXPECT_EQ(s[o], inside ? (v == 5 ? 1 : 0) : -1); }
        }
}

TEST(DataStore, LoaderRunsOnTheStore) {
  ScratchDir dir;
  write_case(dir.path.string(), "a", {8, 12, 12});
  write_case(dir.path.string(), "b", {9, 12, 14});
  auto src = std::make_shared<PreprocessedCaseSource>(dir.path.string());
  planning::ConfigurationPlan plan;
  plan.patch_size = {8, 8, 8};
  plan.batch_size = 2;
  plan.architecture.strides = {{1, 1, 1}, {2, 2, 2}};
  LoaderOptions o;
  o.num_workers = 2;
  DataLoader dl(src, training_pipeline(plan), o, {3, 0, 0});
  Batch b = dl.next();
  EXPECT_EQ(b.data.sizes(), (std::vector<int64_t>{2, 2, 8, 8, 8}));
  EXPECT_EQ(b.forced_label[1] == 1 || b.forced_label[1] == 1001, true);  // "2" has no voxels
  EXPECT_EQ(b.target[0].lt(0).sum().item<int64_t>(), 0);
}
