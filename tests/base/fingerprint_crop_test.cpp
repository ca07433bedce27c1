// Crop to nonzero against hand-built volumes whose masks, boxes and -1 counts are worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "fingerprint/crop.h"

using namespace medseg;
using namespace medseg::fingerprint;

namespace {

struct Box {
  int64_t z0, z1, y0, y1, x0, x1;  // half-open
  bool has(int64_t z, int64_t y, int64_t x) const {
    return z >= z0 && z < z1 && y >= y0 && y < y1 && x >= x0 && x < x1;
  }
};

// Sets `value` on the voxels of `outer` that are not in `inner` (a shell, or a cup when inner
// reaches one face of outer).
void paint_shell(Volume& v, const Box& outer, const Box& inner, float value) {
  const Shape3 s = v.shape();
  float* p = v.data<float>();
  for (int64_t z = 0; z < s[0]; ++z)
    for (int64_t y = 0; y < s[1]; ++y)
      for (int64_t x = 0; x < s[2]; ++x)
        if (outer.has(z, y, x) && !inner.has(z, y, x)) p[(z * s[1] + y) * s[2] + x] = value;
}

int64_t idx(const Shape3& s, int64_t z, int64_t y, int64_t x) { return (z * s[1] + y) * s[2] + x; }

// Shape (7, 8, 14). Channel 0: closed shell, box [1,6)x[2,7)x[2,8) with a 3x3x4 hole.
// Channel 1: a cup, box [1,5)x[2,7)x[9,13) whose hollow [2,5)x[3,6)x[10,12) is open at z=5.
struct Scene {
  Shape3 shape{7, 8, 14};
  Geometry geom;
  std::vector<Volume> channels;
  Volume seg;
  Scene() {
    geom.spacing = {0.5, 1.0, 2.0};
    geom.origin = {10, 20, 30};
    channels.emplace_back(PixelType::Float32, shape, geom);
    channels.emplace_back(PixelType::Float32, shape, geom);
    paint_shell(channels[0], {1, 6, 2, 7, 2, 8}, {2, 5, 3, 6, 3, 7}, 3.0f);
    paint_shell(channels[1], {1, 5, 2, 7, 9, 13}, {2, 5, 3, 6, 10, 12}, -2.0f);
    seg = Volume(PixelType::Int16, shape, geom);
    int16_t* s = seg.data<int16_t>();
    s[idx(shape, 3, 4, 4)] = 1;   // inside the filled hole
    s[idx(shape, 1, 2, 9)] = 2;   // on the cup wall
    s[idx(shape, 3, 4, 10)] = 1;  // in the cup's open hollow: labelled, so it stays 1
  }
};

}  // namespace

TEST(FingerprintCrop, HoleFilledConcavityKeptAndBox) {
  Scene sc;
  CropResult r = crop_to_nonzero(sc.channels, &sc.seg);
  EXPECT_EQ(r.bbox.lo, (Shape3{1, 2, 2}));
  EXPECT_EQ(r.bbox.hi, (Shape3{6, 7, 13}));
  EXPECT_EQ(r.shape_after(), (Shape3{5, 5, 11}));
  EXPECT_EQ(r.shape_before, sc.shape);
  EXPECT_DOUBLE_EQ(r.relative_size(), 275.0 / 784.0);

  const Shape3 c = r.shape_after();
  // Inside: full shell box 5*5*6 = 150 + cup walls 4*5*4 - 3*3*2 = 62.
  int64_t inside = 0;
  for (auto m : r.mask) inside += m;
  EXPECT_EQ(inside, 212);
  EXPECT_EQ(r.mask[idx(c, 2, 2, 3)], 1);  // hole voxel (3,4,5) is filled
  EXPECT_EQ(r.mask[idx(c, 2, 2, 9)], 0);  // cup hollow (3,4,11) stays open
  EXPECT_EQ(r.mask[idx(c, 2, 2, 6)], 0);  // gap between the objects (x=8)
}

TEST(FingerprintCrop, SegMinusOneOutsideMask) {
  Scene sc;
  CropResult r = crop_to_nonzero(sc.channels, &sc.seg);
  ASSERT_EQ(r.seg.pixel_type(), PixelType::Int16);
  const Shape3 c = r.shape_after();
  const int16_t* s = r.seg.data<int16_t>();
  EXPECT_EQ(s[idx(c, 2, 2, 2)], 1);   // labelled hole voxel
  EXPECT_EQ(s[idx(c, 2, 2, 3)], 0);   // unlabelled hole voxel: inside the filled mask
  EXPECT_EQ(s[idx(c, 0, 0, 7)], 2);   // cup wall label
  EXPECT_EQ(s[idx(c, 2, 2, 8)], 1);   // labelled voxel outside the mask keeps its label
  EXPECT_EQ(s[idx(c, 2, 2, 9)], -1);  // unlabelled cup hollow
  EXPECT_EQ(s[idx(c, 2, 2, 6)], -1);  // gap
  int64_t minus = 0;
  for (int64_t i = 0; i < r.seg.numel(); ++i) minus += s[i] == -1;
  EXPECT_EQ(minus, 275 - 212 - 1);  // outside voxels but the labelled one
}

TEST(FingerprintCrop, ChannelsCroppedAndOriginMoved) {
  Scene sc;
  CropResult r = crop_to_nonzero(sc.channels, &sc.seg);
  ASSERT_EQ(r.channels.size(), 2u);
  const Shape3 c = r.shape_after();
  EXPECT_EQ(r.channels[0].shape(), c);
  EXPECT_FLOAT_EQ(r.channels[0].data<float>()[idx(c, 0, 0, 0)], 3.0f);   // (1,2,2): shell corner
  EXPECT_FLOAT_EQ(r.channels[0].data<float>()[idx(c, 2, 2, 3)], 0.0f);   // hole keeps its value
  EXPECT_FLOAT_EQ(r.channels[1].data<float>()[idx(c, 0, 0, 7)], -2.0f);  // (1,2,9): cup wall
  // origin + spacing * lo, per axis x, y, z with identity direction.
  const Geometry& g = r.channels[0].geometry();
  EXPECT_DOUBLE_EQ(g.origin[0], 10 + 0.5 * 2);
  EXPECT_DOUBLE_EQ(g.origin[1], 20 + 1.0 * 2);
  EXPECT_DOUBLE_EQ(g.origin[2], 30 + 2.0 * 1);
  EXPECT_EQ(r.seg.geometry(), g);
}

TEST(FingerprintCrop, OriginFollowsDirection) {
  Geometry g;
  g.spacing = {2, 3, 4};
  g.direction = {-1, 0, 0, 0, 0, 1, 0, 1, 0};         // x axis -> -X, y axis -> Z, z axis -> Y
  const Geometry c = cropped_geometry(g, {1, 2, 3});  // z=1, y=2, x=3 -> steps 6, 6, 4 mm
  EXPECT_DOUBLE_EQ(c.origin[0], -6.0);
  EXPECT_DOUBLE_EQ(c.origin[1], 4.0);
  EXPECT_DOUBLE_EQ(c.origin[2], 6.0);
}

TEST(FingerprintCrop, NoLabelGivesMinusOneOutsideZeroInside) {
  Scene sc;
  CropResult r = crop_to_nonzero(sc.channels);
  ASSERT_EQ(r.seg.pixel_type(), PixelType::Int8);
  int64_t minus = 0, zero = 0;
  for (int64_t i = 0; i < r.seg.numel(); ++i) {
    minus += r.seg.data<int8_t>()[i] == -1;
    zero += r.seg.data<int8_t>()[i] == 0;
  }
  EXPECT_EQ(minus, 63);
  EXPECT_EQ(zero, 212);
}

TEST(FingerprintCrop, UnsignedLabelBecomesSigned) {
  Scene sc;
  Volume u = Volume::from_values(PixelType::UInt8, sc.shape, sc.geom, sc.seg.to_double());
  CropResult r = crop_to_nonzero(sc.channels, &u);
  EXPECT_EQ(r.seg.pixel_type(), PixelType::Int16);
  EXPECT_EQ(r.seg.data<int16_t>()[idx(r.shape_after(), 2, 2, 9)], -1);
}

// 5^3 volume with a 3^3 shell around the centre voxel.
static std::vector<uint8_t> shell5() {
  std::vector<uint8_t> m(125, 0);
  for (int z = 1; z < 4; ++z)
    for (int y = 1; y < 4; ++y)
      for (int x = 1; x < 4; ++x) m[(z * 5 + y) * 5 + x] = !(z == 2 && y == 2 && x == 2);
  return m;
}

TEST(FingerprintCrop, FillHolesUsesFaceConnectivity) {
  const Shape3 s{5, 5, 5};
  auto closed = shell5();
  fill_holes(closed, s);
  EXPECT_EQ(closed[62], 1);  // centre filled

  auto face_open = shell5();
  face_open[(2 * 5 + 2) * 5 + 1] = 0;  // remove a face centre: the centre reaches the outside
  fill_holes(face_open, s);
  EXPECT_EQ(face_open[62], 0);

  auto edge_open = shell5();
  edge_open[(2 * 5 + 1) * 5 + 1] = 0;  // remove an edge voxel: only a diagonal path to the centre
  fill_holes(edge_open, s);
  EXPECT_EQ(edge_open[62], 1);
  EXPECT_EQ(edge_open[(2 * 5 + 1) * 5 + 1], 0);  // the removed voxel itself touches the outside
}

TEST(FingerprintCrop, SingleSliceRingIsNotFilled) {
  // One slice: every voxel lies on the z border, so a 2D ring keeps its hole (as nnU-Net on 2D data).
  const Shape3 s{1, 5, 5};
  std::vector<uint8_t> m(25, 0);
  for (int y = 1; y < 4; ++y)
    for (int x = 1; x < 4; ++x) m[y * 5 + x] = !(y == 2 && x == 2);
  fill_holes(m, s);
  EXPECT_EQ(m[12], 0);
}

TEST(FingerprintCrop, EmptyMaskKeepsWholeVolume) {
  const Shape3 s{3, 4, 5};
  std::vector<Volume> ch{Volume(PixelType::Float32, s)};
  CropResult r = crop_to_nonzero(ch);
  EXPECT_EQ(r.bbox.lo, (Shape3{0, 0, 0}));
  EXPECT_EQ(r.bbox.hi, s);
  EXPECT_DOUBLE_EQ(r.relative_size(), 1.0);
}

TEST(FingerprintCrop, NanCountsAsNonzero) {
  const Shape3 s{3, 3, 3};
  Volume v(PixelType::Float32, s);
  v.data<float>()[idx(s, 1, 2, 0)] = std::nanf("");
  CropResult r = crop_to_nonzero({v});
  EXPECT_EQ(r.bbox.lo, (Shape3{1, 2, 0}));
  EXPECT_EQ(r.bbox.hi, (Shape3{2, 3, 1}));
}

TEST(FingerprintCrop, UncropRestoresWithFill) {
  Scene sc;
  CropResult r = crop_to_nonzero(sc.channels, &sc.seg);
  Volume back = uncrop(r.channels[0], r.bbox, sc.shape, sc.geom, -5.0);
  EXPECT_EQ(back.shape(), sc.shape);
  EXPECT_EQ(back.geometry(), sc.geom);
  const float* b = back.data<float>();
  const float* o = sc.channels[0].data<float>();
  for (int64_t z = 0; z < 7; ++z)
    for (int64_t y = 0; y < 8; ++y)
      for (int64_t x = 0; x < 14; ++x) {
        const bool in = z >= 1 && z < 6 && y >= 2 && y < 7 && x >= 2 && x < 13;
        ASSERT_FLOAT_EQ(b[idx(sc.shape, z, y, x)], in ? o[idx(sc.shape, z, y, x)] : -5.0f);
      }
  EXPECT_THROW(uncrop(r.channels[0], r.bbox, {4, 8, 14}, sc.geom), Error);
}

// Reference: relax "reachable from the border through face-connected background" to a fixed point
// with plain sweeps (slow, obviously correct), then holes = background not reached.
static std::vector<uint8_t> fill_holes_reference(const std::vector<uint8_t>& m, const Shape3& s) {
  std::vector<uint8_t> out(m.size(), 0);
  auto at = [&](int64_t z, int64_t y, int64_t x) { return (z * s[1] + y) * s[2] + x; };
  for (int64_t z = 0; z < s[0]; ++z)
    for (int64_t y = 0; y < s[1]; ++y)
      for (int64_t x = 0; x < s[2]; ++x) {
        const bool border = z == 0 || y == 0 || x == 0 || z == s[0] - 1 || y == s[1] - 1 || x == s[2] - 1;
        out[at(z, y, x)] = border && !m[at(z, y, x)];
      }
  for (bool changed = true; changed;) {
    changed = false;
    for (int64_t z = 0; z < s[0]; ++z)
      for (int64_t y = 0; y < s[1]; ++y)
        for (int64_t x = 0; x < s[2]; ++x) {
          const int64_t i = at(z, y, x);
          if (m[i] || out[i]) continue;
          const bool near = (z > 0 && out[at(z - 1, y, x)]) || (z < s[0] - 1 && out[at(z + 1, y, x)]) ||
                            (y > 0 && out[at(z, y - 1, x)]) || (y < s[1] - 1 && out[at(z, y + 1, x)]) ||
                            (x > 0 && out[at(z, y, x - 1)]) || (x < s[2] - 1 && out[at(z, y, x + 1)]);
          if (near) out[i] = 1, changed = true;
        }
  }
  for (auto& v : out) v = !v;
  return out;
}

TEST(FingerprintCrop, FillHolesMatchesReferenceOnRandomMasks) {
  std::mt19937 rng(42);
  const Shape3 s{9, 10, 11};
  for (int trial = 0; trial < 40; ++trial) {
    const double density = 0.3 + 0.015 * trial;  // from mostly open to mostly closed
    std::bernoulli_distribution on(density);
    std::vector<uint8_t> m(9 * 10 * 11);
    for (auto& v : m) v = on(rng);
    std::vector<uint8_t> filled = m;
    fill_holes(filled, s);
    ASSERT_EQ(filled, fill_holes_reference(m, s)) << "trial " << trial;
  }
}
