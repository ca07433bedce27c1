#include "planning/topology.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace medseg::planning {

IntVec pad_shape(const std::vector<double>& shape, const IntVec& divisor) {
  if (shape.size() != divisor.size()) throw std::invalid_argument("pad_shape: length mismatch");
  IntVec out(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const double d = static_cast<double>(divisor[i]);
    const double rem = std::fmod(shape[i], d);  // Python's % equals fmod for positive values
    double v = shape[i] + d - rem;
    if (rem == 0) v -= d;
    out[i] = static_cast<int64_t>(v);
  }
  return out;
}

namespace {

// The axes the next pooling halves: big enough for two feature maps of min_fm, within a factor 2 of the finest
// spacing among those, and under max_numpool. Empty once the network is deep enough.
std::vector<std::size_t> next_pool_axes(const std::vector<double>& cur_spacing, const std::vector<double>& cur_size,
                                        const IntVec& num_pool_per_axis, double min_fm, int max_numpool) {
  std::vector<std::size_t> valid;
  for (std::size_t i = 0; i < cur_size.size(); ++i)
    if (cur_size[i] >= 2 * min_fm) valid.push_back(i);
  if (valid.empty()) return {};

  double min_valid_spacing = cur_spacing[valid[0]];
  for (auto i : valid) min_valid_spacing = std::min(min_valid_spacing, cur_spacing[i]);
  std::vector<std::size_t> pool_axes;
  for (auto i : valid)
    if (cur_spacing[i] / min_valid_spacing < 2 && num_pool_per_axis[i] < max_numpool) pool_axes.push_back(i);

  // A single remaining axis needs room for one more level of three feature map edges.
  if (pool_axes.size() == 1 && !(cur_size[pool_axes[0]] >= 3 * min_fm)) return {};
  return pool_axes;
}

// Kernels switch to 3 once an axis is within a factor 2 of the finest spacing, and stay 3.
void widen_kernels(IntVec& kernel, const std::vector<double>& cur_spacing) {
  const double min_spacing = *std::min_element(cur_spacing.begin(), cur_spacing.end());
  for (std::size_t d = 0; d < kernel.size(); ++d)
    if (kernel[d] != 3 && cur_spacing[d] / min_spacing < 2) kernel[d] = 3;
}

}  // namespace

Topology pool_and_conv_props(const std::vector<double>& spacing, const std::vector<double>& patch,
                             int min_feature_map_size, int max_numpool) {
  const std::size_t dim = spacing.size();
  if (patch.size() != dim) throw std::invalid_argument("pool_and_conv_props: spacing/patch length mismatch");
  std::vector<double> cur_spacing = spacing, cur_size = patch;
  Topology t;
  t.num_pool_per_axis.assign(dim, 0);
  t.strides.push_back(IntVec(dim, 1));
  IntVec kernel(dim, 1);
  const double min_fm = min_feature_map_size;

  while (true) {
    const std::vector<std::size_t> pool_axes =
        next_pool_axes(cur_spacing, cur_size, t.num_pool_per_axis, min_fm, max_numpool);
    if (pool_axes.empty()) break;
    widen_kernels(kernel, cur_spacing);
    IntVec stride(dim, 1);
    for (auto v : pool_axes) {
      stride[v] = 2;
      t.num_pool_per_axis[v] += 1;
      cur_spacing[v] *= 2;
      cur_size[v] = std::ceil(cur_size[v] / 2);
    }
    t.strides.push_back(stride);
    t.kernel_sizes.push_back(kernel);
  }

  t.divisor.resize(dim);
  for (std::size_t i = 0; i < dim; ++i) t.divisor[i] = int64_t(1) << t.num_pool_per_axis[i];
  t.patch_size = pad_shape(patch, t.divisor);
  t.kernel_sizes.push_back(IntVec(dim, 3));  // bottleneck
  return t;
}

}  // namespace medseg::planning
