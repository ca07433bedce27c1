// The cascade's data path (data/augment/cascade.h, morphology.h, previous_stage_source.h) against
// brute-force definitions and hand-made volumes.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <memory>

#include "core/error.h"
#include "data/augment/cascade.h"
#include "data/batch.h"
#include "data/previous_stage_source.h"
#include "data/rng.h"
#include "preprocessing/case_store.h"
#include "preprocessing/one_hot.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::data;
using namespace medseg::data::augment;

namespace {

using Mask = std::vector<uint8_t>;

// The convolution definition batchgeneratorsv2 uses: a voxel is set when the ball of radius r
// (offsets with |d|^2 <= r^2) around it meets a foreground voxel inside the array.
Mask brute_dilation(const Mask& m, const Shape3& s, double r) {
  const int64_t R = static_cast<int64_t>(std::floor(r));
  Mask out(m.size(), 0);
  for (int64_t z = 0; z < s[0]; ++z)
    for (int64_t y = 0; y < s[1]; ++y)
      for (int64_t x = 0; x < s[2]; ++x)
        for (int64_t dz = -R; dz <= R; ++dz)
          for (int64_t dy = -R; dy <= R; ++dy)
            for (int64_t dx = -R; dx <= R; ++dx) {
              if (double(dz * dz + dy * dy + dx * dx) > r * r) continue;
              const int64_t a = z + dz, b = y + dy, c = x + dx;
              if (a < 0 || b < 0 || c < 0 || a >= s[0] || b >= s[1] || c >= s[2]) continue;
              if (m[static_cast<size_t>((a * s[1] + b) * s[2] + c)])
                out[static_cast<size_t>((z * s[1] + y) * s[2] + x)] = 1;
            }
  return out;
}

Mask negate(const Mask& m) {
  Mask o(m.size());
  for (size_t i = 0; i < m.size(); ++i) o[i] = m[i] ? 0 : 1;
  return o;
}

Mask brute(const Mask& m, const Shape3& s, BinaryOp op, double r) {
  auto erode = [&](const Mask& x) { return negate(brute_dilation(negate(x), s, r)); };
  switch (op) {
    case BinaryOp::Dilation: return brute_dilation(m, s, r);
    case BinaryOp::Erosion: return erode(m);
    case BinaryOp::Closing: return erode(brute_dilation(m, s, r));
    case BinaryOp::Opening: return brute_dilation(erode(m), s, r);
  }
  return {};
}

}  // namespace

TEST(CascadeMorphology, MatchesTheBallConvolutionForEveryOperationAndRadius) {
  for (const Shape3 s : {Shape3{9, 10, 11}, Shape3{1, 17, 13}}) {
    Rng rng(7);
    for (double density : {0.05, 0.3, 0.7}) {
      Mask m(static_cast<size_t>(s[0] * s[1] * s[2]));
      for (auto& v : m) v = rng.bernoulli(density) ? 1 : 0;
      for (double r : {1.0, 1.5, 2.3, 3.0, 4.7})
        for (BinaryOp op : {BinaryOp::Dilation, BinaryOp::Erosion, BinaryOp::Closing, BinaryOp::Opening})
          EXPECT_EQ(binary_operation(m, s, op, r), brute(m, s, op, r))
              << "shape " << s[0] << "x" << s[1] << "x" << s[2] << ", density " << density << ", radius " << r
              << ", op " << static_cast<int>(op);
    }
  }
}

TEST(CascadeMorphology, EmptyAndFullMasks) {
  const Shape3 s{3, 4, 5};
  const Mask empty(60, 0), full(60, 1);
  EXPECT_EQ(binary_operation(empty, s, BinaryOp::Dilation, 2.0), empty);
  EXPECT_EQ(binary_operation(full, s, BinaryOp::Erosion, 2.0), full);  // the outside never erodes
  EXPECT_THROW(binary_operation(full, s, BinaryOp::Erosion, 0.0), Error);
}

TEST(CascadeOneHot, ChannelsPerLabelAndMirroring) {
  // (1, 2, 3): rows [1, 0, 2] and [-1, 2, 5]
  const std::vector<int16_t> seg{1, 0, 2, -1, 2, 5};
  std::vector<float> out(12);
  preprocessing::one_hot(seg.data(), 6, {1, 2}, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 0, 0, 0, 0, 0, /**/ 0, 0, 1, 0, 1, 0}));
  previous_stage_one_hot(seg.data(), {1, 2, 3}, {1, 2}, {2}, out.data());  // x mirrored: [2, 0, 1], [5, 2, -1]
  EXPECT_EQ(out, (std::vector<float>{0, 0, 1, 0, 0, 0, /**/ 1, 0, 0, 0, 1, 0}));
  previous_stage_one_hot(seg.data(), {1, 2, 3}, {1, 2}, {1}, out.data());  // y mirrored
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 1, 0, 0, /**/ 0, 1, 0, 0, 0, 1}));
}

TEST(CascadeAugment, AddedVoxelsAreTakenFromTheOtherChannels) {
  // One row of 6: label 1 at x 0-1, label 2 at x 2-3. Dilating label 1 by 1 takes x 2 from label 2.
  std::vector<float> oh{1, 1, 0, 0, 0, 0, /**/ 0, 0, 1, 1, 0, 0};
  CascadeParams p;
  p.morph.push_back({0, BinaryOp::Dilation, 1.0});
  apply_cascade(p, oh.data(), 2, {1, 1, 6});
  EXPECT_EQ(oh, (std::vector<float>{1, 1, 1, 0, 0, 0, /**/ 0, 0, 0, 1, 0, 0}));
  // Eroding label 2 (now x 3 alone) by 1 empties it; nothing is given to label 1.
  p.morph = {{1, BinaryOp::Erosion, 1.0}};
  apply_cascade(p, oh.data(), 2, {1, 1, 6});
  EXPECT_EQ(oh, (std::vector<float>{1, 1, 1, 0, 0, 0, /**/ 0, 0, 0, 0, 0, 0}));
}

TEST(CascadeAugment, RemovesOneSmallComponentChosenByTheDraw) {
  // 10 x 10 slice (100 voxels, 15 % = 15): components of 1 voxel (row 0), 2 voxels (row 2) and 30
  // voxels (rows 5-7). Only the first two are eligible, in raster order of their first voxel.
  const Shape3 s{1, 10, 10};
  auto make = [] {
    std::vector<float> oh(100, 0.f);
    oh[0] = 1;
    oh[20] = oh[21] = 1;
    for (int i = 50; i < 80; ++i) oh[static_cast<size_t>(i)] = 1;
    return oh;
  };
  CascadeParams p;
  p.removal = {{0, 0.0}};
  auto a = make();
  apply_cascade(p, a.data(), 1, s);
  EXPECT_EQ(a[0], 0.f);
  EXPECT_EQ(a[20] + a[21], 2.f);
  p.removal = {{0, 0.99}};
  auto b = make();
  apply_cascade(p, b.data(), 1, s);
  EXPECT_EQ(b[0], 1.f);
  EXPECT_EQ(b[20] + b[21], 0.f);
  float big = 0;
  for (int i = 50; i < 80; ++i) big += b[static_cast<size_t>(i)];
  EXPECT_EQ(big, 30.f);  // never the large one
}

TEST(CascadeAugment, DrawsFollowNnUNetProbabilities) {
  Rng rng(11);
  int morph = 0, removal = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const CascadeParams p = draw_cascade(3, AugmentConfig{}, rng);
    morph += !p.morph.empty();
    removal += !p.removal.empty();
    if (!p.morph.empty()) {
      ASSERT_EQ(p.morph.size(), 3u);  // p_per_label 1: every channel
      for (const auto& m : p.morph) {
        EXPECT_GE(m.radius, 1.0);
        EXPECT_LT(m.radius, 8.0);
      }
    }
  }
  EXPECT_NEAR(morph / double(n), 0.4, 0.015);
  EXPECT_NEAR(removal / double(n), 0.2, 0.015);
  AugmentConfig off;  // a trainer config with augment false: no cascade perturbation either
  off.disabled();
  for (int i = 0; i < 100; ++i) {
    const CascadeParams p = draw_cascade(3, off, rng);
    EXPECT_TRUE(p.morph.empty() && p.removal.empty());
  }
}

namespace {

// Two cases with labels 1 and 2; the previous stage "predicted" exactly the reference.
struct CascadeFixture {
  test::TempDir dir{"cascade"};
  std::shared_ptr<InMemoryCaseSource> base = std::make_shared<InMemoryCaseSource>();

  CascadeFixture() {
    for (int c = 0; c < 2; ++c) {
      InMemoryCase k;
      k.id = "case_" + std::to_string(c);
      k.shape = {12, 14, 16};
      const int64_t n = 12 * 14 * 16;
      k.data.resize(static_cast<size_t>(n));
      k.seg.resize(static_cast<size_t>(n));
      std::vector<int16_t> prev(static_cast<size_t>(n));
      for (int64_t v = 0; v < n; ++v) {
        const int64_t z = v / (14 * 16), y = (v / 16) % 14, x = v % 16;
        const int label = (z > 2 && z < 9 && y > 3 && y < 11) ? (x < 8 ? 1 : 2) : 0;
        k.seg[static_cast<size_t>(v)] = static_cast<int8_t>(label);
        prev[static_cast<size_t>(v)] = static_cast<int16_t>(label);
        k.data[static_cast<size_t>(v)] = static_cast<float>(label) + 0.01f * static_cast<float>(x);
      }
      k.locations = class_locations_from_seg(k.seg.data(), k.shape, {1, 2});
      preprocessing::write_segmentation_file(previous_stage_file(dir.path(), k.id), k.shape, prev, false);
      base->add(std::move(k));
    }
  }
};

void expect_one_hot_matches_target(const Batch& b, int64_t C, bool all_equal, int* equal, int* differ) {
  ASSERT_EQ(b.data.size(1), C + 2);
  const at::Tensor t = b.target.at(0).to(at::kLong);
  for (int64_t j = 0; j < b.data.size(0); ++j) {
    const at::Tensor oh = b.data[j].slice(0, C, C + 2);
    EXPECT_TRUE(at::logical_or(oh == 0, oh == 1).all().item<bool>()) << "one-hot channels hold only 0 and 1";
    const at::Tensor expect = at::stack({(t[j][0] == 1), (t[j][0] == 2)}).to(at::kFloat);
    const bool same = at::equal(oh, expect);
    if (all_equal) { EXPECT_TRUE(same) << "sample " << j; }
    (same ? *equal : *differ) += 1;
  }
}

}  // namespace

TEST(CascadeBatch, ValidationChannelsAreTheOneHotOfThePreviousStage) {
  CascadeFixture f;
  auto src = std::make_shared<PreviousStageSource>(f.base, f.dir.path(), std::vector<int>{1, 2}, "hint");
  PipelineConfig cfg;
  cfg.final_patch = cfg.loader_patch = {8, 8, 8};
  cfg.batch_size = 3;
  cfg.augment = false;
  cfg.aug.disabled();
  int equal = 0, differ = 0;
  for (int64_t i = 0; i < 4; ++i)
    expect_one_hot_matches_target(build_batch(*src, cfg, 5, 0, i), 1, true, &equal, &differ);
  EXPECT_EQ(equal, 12);
}

TEST(CascadeBatch, TrainingMovesThePreviousStageWithTheReferenceAndSometimesPerturbsIt) {
  // The previous stage equals the reference, so wherever neither cascade transform was drawn, its
  // one-hot must equal the one-hot of the augmented target: same rotation, scaling and mirroring.
  CascadeFixture f;
  auto src = std::make_shared<PreviousStageSource>(f.base, f.dir.path(), std::vector<int>{1, 2}, "hint");
  PipelineConfig cfg;
  cfg.final_patch = {8, 8, 8};
  cfg.loader_patch = {12, 12, 12};
  cfg.batch_size = 4;
  cfg.aug.patch = cfg.final_patch;
  cfg.aug.p_rotation = cfg.aug.p_scaling = 0.5;
  int equal = 0, differ = 0;
  for (int64_t i = 0; i < 15; ++i)
    expect_one_hot_matches_target(build_batch(*src, cfg, 9, 0, i), 1, false, &equal, &differ);
  // P(neither cascade transform) = 0.6 * 0.8 = 0.48 of 60 samples; a perturbation can leave a patch
  // unchanged (e.g. erosion of an absent label), so only bounds are certain.
  EXPECT_GE(equal, 15);
  EXPECT_GE(differ, 5);
}

TEST(CascadeBatch, DeviceAugmentationIsRefused) {
  CascadeFixture f;
  auto src = std::make_shared<PreviousStageSource>(f.base, f.dir.path(), std::vector<int>{1, 2}, "hint");
  PipelineConfig cfg;
  cfg.final_patch = cfg.loader_patch = {8, 8, 8};
  cfg.device_augment = true;
  try {
    build_batch(*src, cfg, 1, 0, 0);
    FAIL() << "expected an error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("previous-stage"), std::string::npos) << e.what(); }
}

TEST(CascadeSource, MissingOrMisshapenFilesAreNamed) {
  CascadeFixture f;
  const std::string file = previous_stage_file(f.dir.path(), "case_1");
  std::filesystem::remove(file);
  try {
    PreviousStageSource s(f.base, f.dir.path(), {1, 2}, "run the final validation");
    FAIL() << "expected an error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
  preprocessing::write_segmentation_file(file, {12, 14, 15}, std::vector<int16_t>(12 * 14 * 15, 0), false);
  try {
    PreviousStageSource s(f.base, f.dir.path(), {1, 2}, "run the final validation");
    FAIL() << "expected an error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("12x14x15"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("run the final validation"), std::string::npos) << e.what();
  }
}
