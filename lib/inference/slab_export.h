#pragma once
// Export steps 1 and 2 (inference/export.h) fed slab by slab, so that a case's logits never need to
// exist at once: the sliding window hands over finished slabs along one axis of the preprocessed
// grid (SlidingWindow::stream), and each output slice along that axis is made as soon as the input
// slices it interpolates from have arrived. Memory: the current slab, two input slices (K planes
// each), the segmentation, and with probabilities every resampled class.
//
// Why its own kernel and not preprocessing/skimage_resize.h's: an order 0 or 1 resize is a product of 1D
// interpolations, one per axis, so the pass along the slab axis can run slice by slice between the
// in-plane passes. The passes always run in the axis order 0, 1, 2, so slabs along any axis (and a
// single slab holding the whole image) give the same numbers bit for bit. The taps are skimage's (pixel-area aligned:
// output o of an axis from n to m samples input (o + 0.5) n / m - 0.5, edge clamped; order 0 rounds ties up), each axis
// with its own order (order_z on the separate-z axis); linear interpolation never leaves the input's range, so
// skimage's clip changes nothing. Spline orders (> 1) prefilter whole axes and cannot stream: they
// keep the whole-array export.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/volume.h"
#include "inference/export.h"

namespace medseg::inference {

class SlabExport {
 public:
  // True when every axis resamples with order 0 or 1.
  static bool supported(const ExportOptions& opts);

  // Slabs run along `axis` (0..2) of props.shape_after_resampling. With `keep_probabilities` every
  // resampled class is kept for finish()'s probabilities.
  SlabExport(const preprocessing::CaseProperties& props, const LabelMapping& labels, const ExportOptions& opts,
             int64_t axis, bool keep_probabilities);
  ~SlabExport();

  // The next slab: logits (K, slab) float32, on the CPU, starting at index `begin` along the axis,
  // which must be where the previous slab ended. Throws Error for a slab out of order or out of shape.
  void add(int64_t begin, const at::Tensor& logits);

  // After the last slab: the segmentation in the original geometry (and the probabilities, as
  // logits_to_segmentation gives them). Throws Error when slabs are missing.
  Volume finish(std::vector<float>* probabilities = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medseg::inference
