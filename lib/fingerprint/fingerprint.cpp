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

const json& need(const json& j, const std::string& key, const std::string& src, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw FileError(src, "missing key '" + where + key + "'");
  return j.at(key);
}

double get_num(const json& j, const std::string& key, const std::string& src, const std::string& where) {
  const json& v = need(j, key, src, where);
  if (v.is_null()) return IntensityStats::kNaN;
  if (!v.is_number()) throw FileError(src, "key '" + where + key + "' must be a number");
  return v.get<double>();
}

IntensityStats stats_from_json(const json& j, const std::string& src, const std::string& where) {
  IntensityStats s;
  s.max = get_num(j, "max", src, where);
  s.mean = get_num(j, "mean", src, where);
  s.median = get_num(j, "median", src, where);
  s.min = get_num(j, "min", src, where);
  s.percentile_00_5 = get_num(j, "percentile_00_5", src, where);
  s.percentile_99_5 = get_num(j, "percentile_99_5", src, where);
  s.std = get_num(j, "std", src, where);
  return s;
}

template <class T>
std::array<T, 3> triple(const json& v, const std::string& src, const std::string& what) {
  if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number())
    throw FileError(src, what + " must be a list of 3 numbers (z, y, x)");
  // Checked: a float such as 1e57 must not be cast into an integer (undefined behaviour, found by fuzzing).
  return {json_as<T>(v[0], what + "[0]", src), json_as<T>(v[1], what + "[1]", src),
          json_as<T>(v[2], what + "[2]", src)};
}

template <class T>
std::vector<std::array<T, 3>> triples(const json& j, const std::string& key, const std::string& src) {
  const json& v = need(j, key, src, "");
  if (!v.is_array()) throw FileError(src, "key '" + key + "' must be a list");
  std::vector<std::array<T, 3>> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(triple<T>(v[i], src, concat(key, "[", i, "]")));
  return out;
}

void medseg_from_json(const json& m, const std::string& src, DatasetFingerprint& fp) {
  const std::string w = "medseg.";
  fp.has_medseg = true;
  fp.version = json_as<int>(need(m, "version", src, w), "key 'medseg.version'", src);
  if (fp.version > kFingerprintVersion)
    throw FileError(
        src, concat("fingerprint version ", fp.version, " is newer than this medseg (", kFingerprintVersion, ")"));
  fp.exact_stats = m.value("exact_stats", false);
  fp.samples_per_case = m.value("samples_per_case", int64_t{0});
  fp.max_samples_total = m.value("max_samples_total", int64_t{0});
  fp.seed = m.value("seed", uint64_t{1234});
  for (const json& c : m.value("cases", json::array())) {
    CaseRecord r;
    r.id = need(c, "id", src, w + "cases[].").get<std::string>();
    r.shape_before_crop = triple<int64_t>(need(c, "shape_before_crop", src, w + "cases[]."), src, "shape_before_crop");
    const json& b = need(c, "bbox", src, w + "cases[].");
    if (!b.is_array() || b.size() != 3) throw FileError(src, "medseg.cases[].bbox must be [[z0,z1],[y0,y1],[x0,x1]]");
    for (int a = 0; a < 3; ++a) {
      r.bbox.lo[a] = json_as<int64_t>(b[a].at(0), "medseg.cases[].bbox", src);
      r.bbox.hi[a] = json_as<int64_t>(b[a].at(1), "medseg.cases[].bbox", src);
    }
    r.relative_size_after_cropping = get_num(c, "relative_size_after_cropping", src, w + "cases[].");
    r.num_foreground_voxels = c.value("num_foreground_voxels", int64_t{0});
    for (const json& s : c.value("foreground_intensity_stats_per_channel", json::array()))
      r.stats.push_back(stats_from_json(s, src, w + "cases[].stats."));
    fp.cases.push_back(std::move(r));
  }
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
  if (!j.is_object()) throw FileError(src, "a fingerprint must be a JSON object");
  DatasetFingerprint fp;
  fp.has_medseg = false;
  const json& ch = need(j, "foreground_intensity_properties_per_channel", src, "");
  if (!ch.is_object() || ch.empty())
    throw FileError(src, "'foreground_intensity_properties_per_channel' must be a non-empty object");
  for (std::size_t c = 0; c < ch.size(); ++c) {
    const std::string k = std::to_string(c);
    const std::string where = "foreground_intensity_properties_per_channel." + k + ".";
    if (!ch.contains(k)) throw FileError(src, "missing key 'foreground_intensity_properties_per_channel." + k + "'");
    fp.intensity_per_channel.push_back(stats_from_json(ch.at(k), src, where));
  }
  fp.median_relative_size_after_cropping = get_num(j, "median_relative_size_after_cropping", src, "");
  fp.shapes_after_crop = triples<int64_t>(j, "shapes_after_crop", src);
  fp.spacings = triples<double>(j, "spacings", src);
  if (fp.shapes_after_crop.size() != fp.spacings.size())
    throw FileError(src, "'shapes_after_crop' and 'spacings' list different numbers of cases");
  if (j.contains("medseg")) medseg_from_json(j.at("medseg"), src, fp);
  return fp;
}

DatasetFingerprint load_fingerprint(const std::string& path) {
  const json j = read_json(path);
  try {
    return fingerprint_from_json(j, path);
  } catch (const FileError&) { throw; } catch (const std::exception& e) {
    throw FileError(path, std::string("malformed fingerprint (") + e.what() + ")");
  }
}

void save_fingerprint(const std::string& path, const DatasetFingerprint& fp) {
  write_file_atomic(path, fingerprint_to_json(fp).dump(4) + "\n");
}

}  // namespace medseg::fingerprint
