#include "data/preprocessed_source.h"

#include "core/error.h"

namespace medseg::data {

int sampling_class_id(const std::string& key, size_t position) {
  if (!key.empty() && key.find(',') == std::string::npos) {
    try {
      size_t used = 0;
      const int v = std::stoi(key, &used);
      if (used == key.size()) return v;
    } catch (const std::exception&) {}
  }
  // Regions never hold background; only the annotated-voxels class does.
  if (("," + key + ",").find(",0,") != std::string::npos) return kAnnotatedClass;
  return 1000 + static_cast<int>(position);
}

PreprocessedCaseSource::PreprocessedCaseSource(const std::string& folder, const std::vector<std::string>& ids) {
  const std::vector<std::string> which = ids.empty() ? preprocessing::list_preprocessed_cases(folder) : ids;
  MEDSEG_CHECK(!which.empty(), folder, ": no preprocessed cases");
  for (const auto& id : which) {
    cases_.push_back(preprocessing::open_preprocessed_case(folder, id));
    const auto& c = cases_.back();
    MEDSEG_CHECK(c.num_channels() == cases_[0].num_channels(), folder, ": case '", id, "' has ", c.num_channels(),
                 " channels, case '", cases_[0].id(), "' has ", cases_[0].num_channels());
    ClassLocations locs;
    const auto& stored = c.properties().class_locations;
    for (size_t k = 0; k < stored.size(); ++k) {
      auto& out = locs[sampling_class_id(stored[k].key, k)];
      out.reserve(stored[k].locations.size());
      for (const auto& l : stored[k].locations) out.push_back({l[1], l[2], l[3]});  // drop the channel index
    }
    locations_.push_back(std::move(locs));
  }
}

void PreprocessedCaseSource::read_data(int64_t i, const Box& box, float* out, float pad) const {
  preprocessing::read_patch(cases_.at(static_cast<size_t>(i)), box, out, pad);
}

void PreprocessedCaseSource::read_seg(int64_t i, const Box& box, int16_t* out, int16_t pad) const {
  preprocessing::read_seg_patch(cases_.at(static_cast<size_t>(i)), box, out, pad);
}

}  // namespace medseg::data
