#include "preprocessing/data_record.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "preprocessing/normalization.h"

namespace fs = std::filesystem;

namespace medseg::preprocessing {

namespace {

// The schemes as nnU-Net spells them: records written before 2026-11-28 say RGBTo0_1Normalization.
json canonical_schemes(const json& names) {
  if (!names.is_array()) return names;
  json out = json::array();
  for (const json& n : names) {
    const auto s = n.is_string() ? planning::normalization_scheme(n.get<std::string>()) : std::nullopt;
    out.push_back(s ? json(planning::normalization_class_name(*s)) : n);
  }
  return out;
}

bool same_spacing(const json& a, const json& b) {
  if (!a.is_array() || !b.is_array() || a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number() || !b[i].is_number()) return false;
    const double x = a[i].get<double>(), y = b[i].get<double>();
    if (std::abs(x - y) > 1e-6 * std::max(std::abs(x), std::abs(y))) return false;
  }
  return true;
}

// "plans 'P' configuration 'C': spacing [..], normalization [..] (mask [..]), transpose [..]"
std::string describe(const json& r) {
  return concat("plans '", r.value("plans_name", std::string("?")), "' configuration '",
                r.value("configuration", std::string("?")), "' (spacing ", r.value("spacing", json()).dump(),
                ", normalization ", r.value("normalization_schemes", json()).dump(), ", mask ",
                r.value("use_mask_for_norm", json()).dump(), ", transpose ",
                r.value("transpose_forward", json()).dump(), ")");
}

}  // namespace

json data_record(const PreprocessPlan& plan) {
  json schemes = json::array(), masks = json::array();
  for (std::size_t c = 0; c < plan.schemes.size(); ++c) {
    schemes.push_back(norm_scheme_name(plan.schemes[c]));
    masks.push_back(static_cast<bool>(plan.use_mask[c]));
  }
  return {{"format", "medseg-preprocessed-data"},
          {"plans_name", plan.plans_name},
          {"configuration", plan.configuration},
          {"data_identifier", plan.data_identifier},
          {"spacing", plan.spacing},
          {"transpose_forward", plan.transpose_forward},
          {"normalization_schemes", schemes},
          {"use_mask_for_norm", masks}};
}

void check_data_record(const std::string& folder, const PreprocessPlan& plan) {
  const fs::path file = fs::path(folder) / kDataRecordName;
  if (!fs::exists(file)) return;
  const json old = read_json(file.string());
  MEDSEG_CHECK_FILE(old.is_object(), file.string(), "not a JSON object");
  const json now = data_record(plan);
  if (old.value("plans_name", std::string()) == plan.plans_name) return;
  const bool same = same_spacing(old.value("spacing", json()), now["spacing"]) &&
                    old.value("transpose_forward", json()) == now["transpose_forward"] &&
                    canonical_schemes(old.value("normalization_schemes", json())) == now["normalization_schemes"] &&
                    old.value("use_mask_for_norm", json()) == now["use_mask_for_norm"];
  MEDSEG_CHECK_FILE(same, folder, "holds the data of ", describe(old), ", which ", describe(now),
                    " would replace under the same data_identifier and change under the first plans' models; give '",
                    plan.plans_name, "' its own data_identifier, or remove the folder");
}

}  // namespace medseg::preprocessing
