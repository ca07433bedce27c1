#pragma once
// Sliding-window prediction of one image shared among the ranks of a run (medseg_predict
// --nproc_per_node): rank r accumulates the tiles of slab r (SlidingWindow::slab), the other ranks
// send their slab's logits and weights to rank 0, which adds them into whole-image accumulators and
// normalises. The result equals the single-process prediction up to the order of the additions
// where neighbouring slabs overlap.
#include <ATen/core/Tensor.h>

#include "distributed/process_group.h"
#include "inference/sliding_window.h"

namespace medseg::inference {

// Every rank calls it with the same image and options. Returns the logits (K, *spatial) float32 on
// CPU on rank 0 and an undefined tensor elsewhere. A rank whose network throws makes every rank
// throw (the failing rank its own error, the others "rank R: ..."), so the ranks stay in step for
// the next image. Accumulators are float32 (no fp16 fallback to agree on).
at::Tensor predict_sliding_window_sharded(const NetworkFn& net, const at::Tensor& image, int64_t num_classes,
                                          const SlidingWindowOptions& opts, distributed::ProcessGroup& group);

}  // namespace medseg::inference
