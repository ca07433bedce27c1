// The overlay's layout and legend, which need no drawing library; the drawing is in overlay_cairo.cpp.
#include "visualization/overlay.h"

#include <algorithm>

#include "core/json_io.h"
#include "visualization/views.h"

namespace medseg::visualization {

std::vector<LegendEntry> legend_from_dataset(const io::DatasetInfo& dataset) {
  std::vector<LegendEntry> out;
  std::vector<const io::LabelDef*> shown;
  for (const auto& l : dataset.labels)
    if (l.name != "ignore" && !(l.values.size() == 1 && l.values[0] == 0)) shown.push_back(&l);
  if (!dataset.has_regions()) {
    for (const auto* l : shown) out.push_back({l->values.at(0), l->name});
    return out;
  }
  const ordered_json order = dataset.raw.value("regions_class_order", ordered_json());
  if (!order.is_array() || order.size() != shown.size()) return out;
  for (std::size_t k = 0; k < shown.size(); ++k) out.push_back({order[k].get<int>(), shown[k]->name});
  return out;
}

Layout overlay_layout(const std::array<int64_t, 3>& shape, const Geometry& geometry, bool with_reference,
                      std::size_t legend_entries) {
  Layout l;
  int x = kMargin, row_height = 0;
  for (const ViewSpec& v : patient_views(shape, geometry)) {
    l.views.push_back({v.name, x, kTitle + kCaption, v.width, v.height});
    x += v.width + kGap;
    row_height = std::max(row_height, v.height);
  }
  const int rows = with_reference ? 2 : 1;
  l.row_step = kCaption + row_height;
  l.width = x - kGap + kMargin + kLegend;
  l.height = std::max(kTitle + rows * l.row_step + kMargin,
                      kTitle + kCaption + static_cast<int>(legend_entries) * kLegendRow + kMargin);
  return l;
}

}  // namespace medseg::visualization
