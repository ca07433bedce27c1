// Point-to-point transfers between ranks (the halo exchange and the sharded prediction's assembly
// stand on them), two ranks as two threads.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "rank_threads.h"

using namespace medseg;

TEST(DistributedP2P, NeighboursExchangeBothWaysAtOnce) {
  run_ranks(2, [](distributed::ProcessGroup& g) {
    const int peer = 1 - g.rank();
    at::Tensor mine = at::arange(12, at::kFloat).reshape({3, 4}) + 100.0 * g.rank();
    at::Tensor theirs = at::zeros({3, 4});
    std::vector<distributed::ProcessGroup::Transfer> t{{peer, true, mine}, {peer, false, theirs}};
    g.exchange(t, 7);
    EXPECT_TRUE(at::equal(theirs, at::arange(12, at::kFloat).reshape({3, 4}) + 100.0 * peer));
  });
}

TEST(DistributedP2P, ReceiveIntoAStridedView) {
  run_ranks(2, [](distributed::ProcessGroup& g) {
    if (g.rank() == 0) {
      g.send(at::full({4}, 5.0), 1, 3);
    } else {
      at::Tensor big = at::zeros({4, 4});
      at::Tensor column = big.select(1, 2);  // not contiguous
      g.recv(column, 0, 3);
      EXPECT_TRUE(at::equal(big.select(1, 2), at::full({4}, 5.0)));
      EXPECT_EQ(big.sum().item<double>(), 20.0);
    }
  });
}

TEST(DistributedP2P, APeerThatIsNotAnotherRankIsRefused) {
  EXPECT_THROW(run_ranks(2,
                         [](distributed::ProcessGroup& g) {
                           at::Tensor t = at::zeros({1});
                           g.send(t, g.rank(), 0);
                         }),
               std::exception);
}
