#pragma once
// Synthetic preprocessed cases for tests and benchmarks: smooth noisy intensities, one ellipsoid
// per foreground label, and -1 in the corners (outside a "nonzero mask") like nnU-Net's seg files.
#include <cstdint>
#include <memory>
#include <string>

#include "data/case_source.h"

namespace medseg::bench {

data::InMemoryCase make_synthetic_case(const std::string& id, const Shape3& shape, int64_t channels, int num_labels,
                                       uint64_t seed);

// `n` cases with shapes drawn uniformly between min_shape and max_shape (inclusive).
std::shared_ptr<data::InMemoryCaseSource> make_synthetic_source(int64_t n, const Shape3& min_shape,
                                                                const Shape3& max_shape, int64_t channels,
                                                                int num_labels, uint64_t seed);

}  // namespace medseg::bench
