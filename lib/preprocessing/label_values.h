#pragma once
// The distinct values of a label map, ascending: the label order both of nnU-Net's segmentation
// resamplings walk (resampling.cpp, resampling_torch.cpp).
#include <cstdint>
#include <vector>

namespace medseg::preprocessing {

std::vector<int16_t> sorted_labels(const std::vector<int16_t>& seg);

}  // namespace medseg::preprocessing
