// halo_exchange (distributed/halo.h) on two and three ranks as threads, against hand-computed planes
// and against the same slicing done on the whole tensor in one process.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <mutex>
#include <vector>

#include "core/error.h"
#include "distributed/halo.h"
#include "rank_threads.h"

using namespace medseg;

namespace {

// Rank r's slab: planes r*10 + 0..3 along dim 2, shape (1, 1, 4, 2).
at::Tensor numbered_slab(int r) {
  return (at::arange(4, at::kFloat) + 10.0 * r).view({1, 1, 4, 1}).expand({1, 1, 4, 2}).contiguous();
}

std::vector<float> planes_of(const at::Tensor& t) {
  const at::Tensor c = t.select(3, 0).flatten().contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

TEST(HaloExchange, ForwardMatchesHandComputedPlanes) {
  // left 1, right 2 on three slabs [0..3], [10..13], [20..23]; zeros at the volume border.
  const std::vector<std::vector<float>> expected = {
      {0, 0, 1, 2, 3, 10, 11},
      {3, 10, 11, 12, 13, 20, 21},
      {13, 20, 21, 22, 23, 0, 0},
  };
  run_ranks(3, [&](distributed::ProcessGroup& g) {
    at::set_num_threads(1);
    const auto shard = distributed::shard_over_group(g, 0);
    const at::Tensor y = distributed::halo_exchange(numbered_slab(g.rank()), 2, 1, 2, shard);
    EXPECT_EQ(planes_of(y), expected[g.rank()]) << "rank " << g.rank();
    EXPECT_TRUE(at::equal(y.select(3, 0), y.select(3, 1)));  // other dims untouched
  });
}

TEST(HaloExchange, BackwardAddsHaloGradientsOntoTheOwnersPlanes) {
  // Upstream gradient: the padded plane's index + 1 (1..7) on every rank. Rank r's gradient is that
  // of its middle planes (2..5), plus what its neighbours received: plane 0 of the next slab's padded
  // output (its left halo = our last plane, 1) and planes 5, 6 of the previous one (its right halo =
  // our first two planes, 6 and 7).
  const std::vector<std::vector<float>> expected = {
      {2, 3, 4, 5 + 1},
      {2 + 6, 3 + 7, 4, 5 + 1},
      {2 + 6, 3 + 7, 4, 5},
  };
  run_ranks(3, [&](distributed::ProcessGroup& g) {
    at::set_num_threads(1);
    const auto shard = distributed::shard_over_group(g, 0);
    const at::Tensor x = numbered_slab(g.rank()).requires_grad_(true);
    const at::Tensor y = distributed::halo_exchange(x, 2, 1, 2, shard);
    const at::Tensor up = at::arange(1, 8, at::kFloat).view({1, 1, 7, 1}).expand({1, 1, 7, 2});
    y.backward(up);
    EXPECT_EQ(planes_of(x.grad()), expected[g.rank()]) << "rank " << g.rank();
  });
}

TEST(HaloExchange, GradientMatchesTheUnshardedSlicing) {
  // Each slab's padded output is a window of the zero-padded whole tensor, so <g, y> summed over
  // ranks has the same gradient (and the same directional derivative <grad, dx>) in one process.
  const int n = 2;
  const int64_t dim = 3, left = 2, right = 1, len = 5;
  at::manual_seed(3);
  const at::Tensor whole = at::randn({2, 3, 4, n * len, 3});
  const at::Tensor up = at::randn({n, 2, 3, 4, left + len + right, 3});
  const at::Tensor dx = at::randn_like(whole);
  at::Tensor ref = whole.clone().requires_grad_(true);
  const at::Tensor padded = at::constant_pad_nd(ref, {0, 0, left, right});
  at::Tensor loss = at::zeros({});
  for (int r = 0; r < n; ++r) loss = loss + (padded.narrow(dim, r * len, left + len + right) * up[r]).sum();
  loss.backward();
  std::vector<at::Tensor> grads(n);
  run_ranks(n, [&](distributed::ProcessGroup& g) {
    at::set_num_threads(1);
    at::Tensor x = distributed::spatial_slab(whole, 1, g.rank(), n).requires_grad_(true);
    const at::Tensor y = distributed::halo_exchange(x, dim, left, right, distributed::shard_over_group(g, 1));
    (y * up[g.rank()]).sum().backward();
    grads[g.rank()] = x.grad();
  });
  EXPECT_TRUE(at::allclose(at::cat(grads, dim), ref.grad(), 1e-5, 1e-6));
  double sharded = 0;
  for (int r = 0; r < n; ++r) sharded += (grads[r] * distributed::spatial_slab(dx, 1, r, n)).sum().item<double>();
  EXPECT_NEAR(sharded, (ref.grad() * dx).sum().item<double>(), 1e-3);
}

TEST(HaloExchange, AHaloWiderThanTheSlabIsRefused) {
  std::mutex m;
  std::vector<std::string> messages;
  run_ranks(2, [&](distributed::ProcessGroup& g) {
    try {
      distributed::halo_exchange(at::zeros({1, 1, 2, 3}), 2, 3, 0, distributed::shard_over_group(g, 0));
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(m);
      messages.push_back(e.what());
    }
  });
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_NE(messages[0].find("wider than the 2-plane slab"), std::string::npos) << messages[0];
}

TEST(HaloExchange, NoNeighbourMeansZeroPadding) {
  distributed::SpatialShard alone;  // no group: one slab, the whole volume
  const at::Tensor y = distributed::halo_exchange(at::ones({1, 1, 3, 2}), 2, 1, 1, alone);
  EXPECT_EQ(y.size(2), 5);
  EXPECT_EQ(y.sum().item<double>(), 6.0);
}

TEST(SpatialSlab, SplitsEquallyAndRefusesARemainder) {
  const at::Tensor x = at::arange(2 * 6 * 4, at::kFloat).view({1, 2, 6, 4});
  const at::Tensor s = distributed::spatial_slab(x, 1, 1, 2);
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_TRUE(at::equal(s, x.narrow(3, 2, 2)));
  EXPECT_TRUE(at::equal(at::cat({distributed::spatial_slab(x, 0, 0, 3), distributed::spatial_slab(x, 0, 1, 3),
                                 distributed::spatial_slab(x, 0, 2, 3)},
                                2),
                        x));
  try {
    distributed::spatial_slab(x, 0, 0, 4);
    FAIL() << "6 planes split into 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible into 4 equal slabs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(distributed::spatial_slab(x, 2, 0, 1), Error);  // no spatial axis 2 in a 2-D tensor
}
