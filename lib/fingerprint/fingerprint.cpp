#include "fingerprint/fingerprint.h"

#include <cmath>

#include "core/error.h"
#include "core/json_object_reader.h"

namespace medseg::fingerprint {

namespace {

using ojson = nlohmann::ordered_json;

// NaN (a case without foreground) is written as null.
ojson num(double v) { return std::isnan(v) ? ojson() : ojson(v); }

ojson stats_to_json(const IntensityStats& s) {
  ojson j;
  j["max"] = num(s.max);
  j["mean"] = num(s.mean);
  j["median"] = num(s.median);
  j["min"] = num(s.min);
  j["percentile_00_5"] = num(s.percentile_00_5);
  j["percentile_99_5"] = num(s.percentile_99_5);
  j["std"] = num(s.std);
  return j;
}

ojson shape_json(const Shape3& s) { return ojson::array({s[0], s[1], s[2]}); }

// Keys sorted like the rest of the file (as Python's json.dump(sort_keys=True) would write them).
ojson medseg_to_json(const DatasetFingerprint& fp) {
  json m;
  m["version"] = fp.version;
  m["exact_stats"] = fp.exact_stats;
  m["samples_per_case"] = fp.samples_per_case;
  m["max_samples_total"] = fp.max_samples_total;
  m["seed"] = fp.seed;
  m["rng"] = "mt19937_64";
  json cases = json::array();
  for (const auto& c : fp.cases) {
    json cj;
    cj["id"] = c.id;
    cj["shape_before_crop"] = {c.shape_before_crop[0], c.shape_before_crop[1], c.shape_before_crop[2]};
    cj["bbox"] = {{c.bbox.lo[0], c.bbox.hi[0]}, {c.bbox.lo[1], c.bbox.hi[1]}, {c.bbox.lo[2], c.bbox.hi[2]}};
    cj["relative_size_after_cropping"] = c.relative_size_after_cropping;
    cj["num_foreground_voxels"] = c.num_foreground_voxels;
    json st = json::array();
    for (const auto& s : c.stats) st.push_back(json::parse(stats_to_json(s).dump()));
    cj["foreground_intensity_stats_per_channel"] = st;
    cases.push_back(cj);
  }
  m["cases"] = cases;
  return ojson::parse(m.dump());
}

// --- parsing ------------------------------------------------------------------------------------

// A statistic; null is NaN (a case without foreground).
double get_num(const JsonObjectReader& r, const std::string& key) {
  return r.is_null(key) ? IntensityStats::kNaN : r.get<double>(key);
}

IntensityStats stats_from_json(const JsonObjectReader& r) {
  IntensityStats s;
  s.max = get_num(r, "max");
  s.mean = get_num(r, "mean");
  s.median = get_num(r, "median");
  s.min = get_num(r, "min");
  s.percentile_00_5 = get_num(r, "percentile_00_5");
  s.percentile_99_5 = get_num(r, "percentile_99_5");
  s.std = get_num(r, "std");
  return s;
}

// One case of medseg's own block. Checked reads (json_as): a float such as 1e57 must not be cast into an
// integer (undefined behaviour, found by fuzzing).
CaseRecord case_record_from_json(const JsonObjectReader& c) {
  CaseRecord r;
  r.id = c.get<std::string>("id");
  r.shape_before_crop = c.get<Shape3>("shape_before_crop");
  const auto bbox = c.get<std::array<std::array<int64_t, 2>, 3>>("bbox");  // [[z0, z1], [y0, y1], [x0, x1]]
  for (std::size_t a = 0; a < 3; ++a) {
    r.bbox.lo[a] = bbox[a][0];
    r.bbox.hi[a] = bbox[a][1];
  }
  r.relative_size_after_cropping = get_num(c, "relative_size_after_cropping");
  r.num_foreground_voxels = c.get_or<int64_t>("num_foreground_voxels", 0);
  for (const JsonObjectReader& s : c.objects("foreground_intensity_stats_per_channel", false))
    r.stats.push_back(stats_from_json(s));
  return r;
}

void medseg_from_json(const JsonObjectReader& m, DatasetFingerprint& fp) {
  fp.has_medseg = true;
  fp.version = m.get<int>("version");
  m.check(fp.version <= kFingerprintVersion, "fingerprint version ", fp.version, " is newer than this medseg (",
          kFingerprintVersion, ")");
  fp.exact_stats = m.get_or<bool>("exact_stats", false);
  fp.samples_per_case = m.get_or<int64_t>("samples_per_case", 0);
  fp.max_samples_total = m.get_or<int64_t>("max_samples_total", 0);
  fp.seed = m.get_or<uint64_t>("seed", 1234);
  for (const JsonObjectReader& c : m.objects("cases", false)) fp.cases.push_back(case_record_from_json(c));
}

}  // namespace

nlohmann::ordered_json fingerprint_to_json(const DatasetFingerprint& fp) {
  ojson j;
  ojson ch;
  for (std::size_t c = 0; c < fp.intensity_per_channel.size(); ++c)
    ch[std::to_string(c)] = stats_to_json(fp.intensity_per_channel[c]);
  j["foreground_intensity_properties_per_channel"] = ch;
  j["median_relative_size_after_cropping"] = fp.median_relative_size_after_cropping;
  if (fp.has_medseg) j["medseg"] = medseg_to_json(fp);
  ojson shapes = ojson::array(), spacings = ojson::array();
  for (const auto& s : fp.shapes_after_crop) shapes.push_back(shape_json(s));
  for (const auto& s : fp.spacings) spacings.push_back(ojson::array({s[0], s[1], s[2]}));
  j["shapes_after_crop"] = shapes;
  j["spacings"] = spacings;
  return j;
}

DatasetFingerprint fingerprint_from_json(const json& j, const std::string& src) {
  const JsonObjectReader r(j, src, "", "a fingerprint");
  DatasetFingerprint fp;
  fp.has_medseg = false;
  const JsonObjectReader ch = r.object("foreground_intensity_properties_per_channel", true);
  r.check(!ch.value().empty(), "'foreground_intensity_properties_per_channel' must be a non-empty object");
  for (std::size_t c = 0; c < ch.value().size(); ++c)  // keys "0", "1", ...: one per channel, in order
    fp.intensity_per_channel.push_back(stats_from_json(ch.object(std::to_string(c), true)));
  fp.median_relative_size_after_cropping = get_num(r, "median_relative_size_after_cropping");
  fp.shapes_after_crop = r.get<std::vector<Shape3>>("shapes_after_crop");
  fp.spacings = r.get<std::vector<std::array<double, 3>>>("spacings");
  r.check(fp.shapes_after_crop.size() == fp.spacings.size(),
          "'shapes_after_crop' and 'spacings' list different numbers of cases");
  if (r.has("medseg")) medseg_from_json(r.object("medseg", true), fp);
  return fp;
}

DatasetFingerprint load_fingerprint(const std::string& path) {
  const json j = read_json(path);
  try {
    return fingerprint_from_json(j, path);
  } catch (const FileError&) { throw; } catch (const std::exception& e) {
    throw FileError(path, concat("malformed fingerprint (", e.what(), ")"));
  }
}

void save_fingerprint(const std::string& path, const DatasetFingerprint& fp) {
  write_file_atomic(path, fingerprint_to_json(fp).dump(4) + "\n");
}

}  // namespace medseg::fingerprint
