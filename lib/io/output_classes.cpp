#include "io/output_classes.h"

#include <algorithm>

#include "core/error.h"

namespace medseg::io {

OutputClasses output_classes(const DatasetInfo& dataset, const std::string& source) {
  OutputClasses m;
  if (dataset.has_regions()) {
    m.regions = true;
    const ordered_json order = dataset.raw.value("regions_class_order", ordered_json());
    MEDSEG_CHECK_FILE(order.is_array(), source, "dataset has regions but no 'regions_class_order'");
    for (const auto& v : order) m.values.push_back(v.get<int>());
    MEDSEG_CHECK_FILE(static_cast<int64_t>(m.values.size()) == network_outputs(dataset), source,
                      "'regions_class_order' has ", m.values.size(), " entries for ", network_outputs(dataset),
                      " regions");
  } else {
    for (const auto& l : dataset.labels)
      if (l.name != "ignore") m.values.push_back(l.values.at(0));
    std::sort(m.values.begin(), m.values.end());
  }
  return m;
}

json probabilities_meta(const OutputClasses& classes, const std::vector<int64_t>& shape, const Geometry& g) {
  return {{"format", "medseg-probabilities"},
          {"version", 1},
          {"array", "(class, z, y, x) float32, the segmentation's voxel order"},
          {"kind", classes.regions ? "sigmoid per region" : "softmax over labels"},
          {"class_values", classes.values},
          {"shape", shape},
          {"spacing", g.spacing},
          {"origin", g.origin},
          {"direction", g.direction},
          {"file_dimension", g.file_dimension}};
}

}  // namespace medseg::io
