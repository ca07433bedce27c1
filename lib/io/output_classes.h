#pragma once
// What each output channel of a network trained on a dataset stands for, as nnU-Net's LabelManager orders
// them: the label values sorted (background first, "ignore" left out), or for a region-based dataset the
// values of regions_class_order, one per region. Probability files (medseg's and nnU-Net's .npz) follow it.
#include <cstdint>
#include <string>
#include <vector>

#include "core/json_io.h"
#include "core/volume.h"
#include "io/dataset.h"

namespace medseg::io {

struct OutputClasses {
  std::vector<int> values;  // the label value output k is written as
  bool regions = false;     // sigmoid per region (later regions win) instead of a softmax over labels
};

// Throws FileError naming `source` for a region dataset whose regions_class_order is missing or does not
// have one entry per region.
OutputClasses output_classes(const DatasetInfo& dataset, const std::string& source);

// The CASE_probabilities.json of medseg's probability files (format medseg-probabilities, docs/predict.md):
// what the (class, z, y, x) float32 array of `shape` holds and the geometry of its segmentation. Written by
// prediction, and made by medseg_ensemble for nnU-Net's .npz files, which carry none.
json probabilities_meta(const OutputClasses& classes, const std::vector<int64_t>& shape, const Geometry& g);

}  // namespace medseg::io
