#include "inference/sharded_window.h"

#include <ATen/ATen.h>

#include "core/error.h"

namespace medseg::inference {
namespace {

constexpr int kSlabTag = 211;

// The slab-shaped part [begin, end) along `axis` of a (K, *spatial) or (*spatial) accumulator.
at::Tensor slab_of(const at::Tensor& acc, const SlidingWindow::Slab& s, int64_t leading) {
  return acc.narrow(s.axis + leading, s.begin, s.end - s.begin);
}

}  // namespace

at::Tensor predict_sliding_window_sharded(const NetworkFn& net, const at::Tensor& image, int64_t num_classes,
                                          const SlidingWindowOptions& opts, distributed::ProcessGroup& group) {
  SlidingWindowOptions o = opts;
  o.half_accumulators = false;    // the ranks' partial sums are added on rank 0: fp32 keeps that exact
  o.split_most_positions = true;  // the ranks' share of the tiles is balanced along the longest run
  const SlidingWindow window(image, num_classes, o);
  const int rank = group.rank(), n = group.size();
  std::pair<at::Tensor, at::Tensor> mine;
  distributed::agree(&group, "sliding window", [&] {
    mine = window.accumulate(net, rank, n);
    if (mine.first.defined()) mine = {mine.first.to(at::kCPU), mine.second.to(at::kCPU)};
  });
  if (rank != 0) {
    if (!window.slab(rank, n).empty()) {
      // One message: two sends to one peer on one tag need not arrive in order.
      group.send(at::cat({mine.first.reshape({-1}), mine.second.reshape({-1})}), 0, kSlabTag);
    }
    return at::Tensor();
  }
  auto [logits, weights] = window.zero_accumulators();
  for (int r = 0; r < n; ++r) {
    const SlidingWindow::Slab s = window.slab(r, n);
    if (s.empty()) continue;
    at::Tensor l = slab_of(logits, s, 1), w = slab_of(weights, s, 0);
    if (r == 0) {
      l.add_(mine.first);
      w.add_(mine.second);
      continue;
    }
    at::Tensor both = at::empty({l.numel() + w.numel()}, at::kFloat);
    group.recv(both, r, kSlabTag);
    l.add_(both.narrow(0, 0, l.numel()).view(l.sizes()));
    w.add_(both.narrow(0, l.numel(), w.numel()).view(w.sizes()));
  }
  return window.finish(logits, weights);
}

}  // namespace medseg::inference
