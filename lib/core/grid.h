#pragma once
// The grid vocabulary every stage shares: a shape and a box of voxel indices, both in array order
// (z, y, x). One definition so that a crop box from fingerprinting, the box a preprocessed case
// was cut from and the box the sampler reads are the same type, not copies field by field.
#include <array>
#include <cstdint>

namespace medseg {

using Shape3 = std::array<int64_t, 3>;  // (z, y, x), array order

// Half-open box [lo, hi) in voxel indices. It may reach outside a volume (lo negative, hi past
// the end): readers fill the outside with a pad value.
struct Box {
  Shape3 lo{0, 0, 0};
  Shape3 hi{0, 0, 0};  // exclusive
  Shape3 shape() const { return {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}; }
  int64_t numel() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
  bool operator==(const Box& o) const { return lo == o.lo && hi == o.hi; }
  bool operator!=(const Box& o) const { return !(*this == o); }
};

}  // namespace medseg
