#include "io/label_check.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "core/strings.h"

namespace medseg::io {
namespace {

// The first `max_listed` values of `v` as "1, 2, 3", then how many there are when some were left out.
std::string listed(const std::vector<int>& v, size_t max_listed) {
  std::string s = join(std::vector<int>(v.begin(), v.begin() + std::min(v.size(), max_listed)), ", ");
  if (v.size() > max_listed) s += concat(", ... (", v.size(), " in all)");
  return s;
}

}  // namespace

std::vector<int> distinct_label_values(const Volume& label) {
  std::vector<int> out;
  if (label.pixel_type() == PixelType::Int16) {
    std::vector<uint8_t> seen(65536, 0);
    const int16_t* p = label.data<int16_t>();
    for (int64_t i = 0; i < label.numel(); ++i) seen[static_cast<size_t>(p[i] + 32768)] = 1;
    for (int v = 0; v < 65536; ++v)
      if (seen[static_cast<size_t>(v)]) out.push_back(v - 32768);
    return out;
  }
  MEDSEG_CHECK(label.pixel_type() == PixelType::Int32, "distinct_label_values: not an Int16/Int32 label map");
  out.assign(label.data<int32_t>(), label.data<int32_t>() + label.numel());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string undeclared_labels_problem(const Volume& label, const std::vector<int>& declared) {
  std::vector<int> bad;
  for (int v : distinct_label_values(label))
    if (std::find(declared.begin(), declared.end(), v) == declared.end()) bad.push_back(v);
  if (bad.empty()) return "";
  return "label value(s) " + listed(bad, 10) + " not declared in dataset.json (declared: " + listed(declared, 20) + ")";
}

void check_label_values(const Volume& label, const std::vector<int>& declared, const std::string& file,
                        const std::string& case_id) {
  const std::string problem = undeclared_labels_problem(label, declared);
  MEDSEG_CHECK_FILE(problem.empty(), file, "case '", case_id, "': ", problem);
}

}  // namespace medseg::io
