#pragma once
// What each output channel of a network trained on a dataset stands for, as nnU-Net's LabelManager orders
// them: the label values sorted (background first, "ignore" left out), or for a region-based dataset the
// values of regions_class_order, one per region. Probability files (medseg's and nnU-Net's .npz) follow it.
#include <string>
#include <vector>

#include "io/dataset.h"

namespace medseg::io {

struct OutputClasses {
  std::vector<int> values;  // the label value output k is written as
  bool regions = false;     // sigmoid per region (later regions win) instead of a softmax over labels
};

// Throws FileError naming `source` for a region dataset whose regions_class_order is missing or does not
// have one entry per region.
OutputClasses output_classes(const DatasetInfo& dataset, const std::string& source);

}  // namespace medseg::io
