#include "data/augment/cascade.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"
#include "postprocessing/components.h"
#include "preprocessing/one_hot.h"

namespace medseg::data::augment {

namespace {

// numpy's shuffle draws differ from ours anyway; any uniform permutation is nnU-Net's behaviour.
std::vector<int> shuffled(int n, Rng& rng) {
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(rng.randint(0, i))]);
  return order;
}

std::vector<uint8_t> channel_mask(const float* c, int64_t n) {
  std::vector<uint8_t> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) m[static_cast<size_t>(i)] = c[i] != 0.f ? 1 : 0;
  return m;
}

}  // namespace

CascadeParams draw_cascade(int channels, const AugmentConfig& cfg, Rng& rng) {
  CascadeParams p;
  if (channels < 1) return p;
  if (rng.bernoulli(cfg.p_cascade_morph))
    for (int c : shuffled(channels, rng)) {
      CascadeParams::Morph m;
      m.channel = c;
      m.op = static_cast<BinaryOp>(rng.randint(0, 3));
      m.radius = rng.uniform(kCascadeRadiusLo, kCascadeRadiusHi);
      p.morph.push_back(m);
    }
  if (rng.bernoulli(cfg.p_cascade_removal))
    for (int c : shuffled(channels, rng)) p.removal.push_back({c, rng.uniform()});
  return p;
}

void previous_stage_one_hot(const int16_t* seg, const Shape3& shape, const std::vector<int>& labels,
                            const std::vector<int64_t>& mirror_axes, float* out) {
  std::array<bool, 3> flip{false, false, false};
  for (int64_t a : mirror_axes) {
    MEDSEG_CHECK(a >= 0 && a <= 2, "previous_stage_one_hot: mirror axis ", a);
    flip[static_cast<size_t>(a)] = true;
  }
  const int64_t Z = shape[0], Y = shape[1], X = shape[2], vol = Z * Y * X;
  if (!flip[0] && !flip[1] && !flip[2]) return preprocessing::one_hot(seg, vol, labels, out);
  std::vector<int16_t> mirrored(static_cast<size_t>(vol));
  for (int64_t z = 0; z < Z; ++z)
    for (int64_t y = 0; y < Y; ++y)
      for (int64_t x = 0; x < X; ++x)
        mirrored[static_cast<size_t>((z * Y + y) * X + x)] =
            seg[((flip[0] ? Z - 1 - z : z) * Y + (flip[1] ? Y - 1 - y : y)) * X + (flip[2] ? X - 1 - x : x)];
  preprocessing::one_hot(mirrored.data(), vol, labels, out);
}

namespace {

// A binary opening, closing, dilation or erosion of one label's channel; a voxel it adds leaves the other labels.
void apply_morphology(const CascadeParams::Morph& m, float* onehot, int channels, const Shape3& shape) {
  const int64_t n = shape[0] * shape[1] * shape[2];
  float* c = onehot + m.channel * n;
  const std::vector<uint8_t> before = channel_mask(c, n);
  const std::vector<uint8_t> after = binary_operation(before, shape, m.op, m.radius);
  for (int64_t i = 0; i < n; ++i) {
    const bool added = after[static_cast<size_t>(i)] && !before[static_cast<size_t>(i)];
    if (added)  // a voxel holds one label: what this channel gains, the others lose
      for (int o = 0; o < channels; ++o)
        if (o != m.channel) onehot[o * n + i] = 0.f;
    c[i] = after[static_cast<size_t>(i)] ? 1.f : 0.f;
  }
}

// One small connected component of one label's channel removed (the one `r.pick` points at), if there is one.
void remove_component(const CascadeParams::Removal& r, float* onehot, const Shape3& shape) {
  const int64_t n = shape[0] * shape[1] * shape[2];
  float* c = onehot + r.channel * n;
  const std::vector<uint8_t> mask = channel_mask(c, n);
  if (std::find(mask.begin(), mask.end(), uint8_t{1}) == mask.end()) return;
  const auto comps = postprocessing::connected_components(mask, shape);
  std::vector<int32_t> eligible;
  for (size_t k = 1; k < comps.sizes.size(); ++k)
    if (static_cast<double>(comps.sizes[k]) < static_cast<double>(n) * kCascadeRemovalMaxFraction)
      eligible.push_back(static_cast<int32_t>(k));
  if (eligible.empty()) return;
  const auto pick = std::min(eligible.size() - 1, static_cast<size_t>(r.pick * static_cast<double>(eligible.size())));
  const int32_t gone = eligible[pick];
  for (int64_t i = 0; i < n; ++i)
    if (comps.label[static_cast<size_t>(i)] == gone) c[i] = 0.f;
}

}  // namespace

void apply_cascade(const CascadeParams& p, float* onehot, int channels, const Shape3& shape) {
  for (const auto& m : p.morph) {
    MEDSEG_CHECK(m.channel >= 0 && m.channel < channels, "apply_cascade: channel out of range");
    apply_morphology(m, onehot, channels, shape);
  }
  for (const auto& r : p.removal) {
    MEDSEG_CHECK(r.channel >= 0 && r.channel < channels, "apply_cascade: channel out of range");
    remove_component(r, onehot, shape);
  }
}

}  // namespace medseg::data::augment
