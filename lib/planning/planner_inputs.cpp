#include "planning/planner_inputs.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.h"

namespace medseg::planning {
namespace {

std::vector<std::vector<double>> read_rows(const json& j, const std::string& key, const std::string& src) {
  MEDSEG_CHECK_FILE(j.contains(key), src, "missing key '", key, "'");
  const json& a = j.at(key);
  MEDSEG_CHECK_FILE(a.is_array() && !a.empty(), src, "'", key, "' must be a non-empty list of 3-element lists");
  std::vector<std::vector<double>> rows;
  rows.reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const json& r = a[i];
    MEDSEG_CHECK_FILE(r.is_array() && r.size() == 3, src, "'", key, "'[", i, "] must have 3 entries (z, y, x)");
    std::vector<double> row;
    for (const auto& v : r) {
      MEDSEG_CHECK_FILE(v.is_number(), src, "'", key, "'[", i, "] holds a non-number");
      const double x = v.get<double>();
      MEDSEG_CHECK_FILE(x > 0 && std::isfinite(x), src, "'", key, "'[", i, "] must be positive and finite");
      row.push_back(x);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

FingerprintInput fingerprint_from_json(const json& j, const std::string& source) {
  MEDSEG_CHECK_FILE(j.is_object(), source, "fingerprint must be a JSON object");
  FingerprintInput f;
  f.source = source;
  f.spacings = read_rows(j, "spacings", source);
  f.shapes_after_crop = read_rows(j, "shapes_after_crop", source);
  MEDSEG_CHECK_FILE(f.spacings.size() == f.shapes_after_crop.size(), source, "'spacings' has ", f.spacings.size(),
                    " cases but 'shapes_after_crop' has ", f.shapes_after_crop.size());
  MEDSEG_CHECK_FILE(j.contains("foreground_intensity_properties_per_channel") &&
                        j.at("foreground_intensity_properties_per_channel").is_object(),
                    source, "missing or invalid 'foreground_intensity_properties_per_channel'");
  f.foreground_intensity_properties_per_channel = j.at("foreground_intensity_properties_per_channel");
  MEDSEG_CHECK_FILE(
      j.contains("median_relative_size_after_cropping") && j.at("median_relative_size_after_cropping").is_number(),
      source, "missing or non-numeric 'median_relative_size_after_cropping'");
  f.median_relative_size_after_cropping = j.at("median_relative_size_after_cropping").get<double>();
  return f;
}

FingerprintInput load_fingerprint(const std::string& path) { return fingerprint_from_json(read_json(path), path); }

namespace {

// channel_names (or the legacy "modality"): "0", "1", ... mapped to names, in index order.
std::vector<std::string> channel_names_from_json(const json& j, const std::string& source) {
  const char* ch_key = j.contains("channel_names") ? "channel_names" : "modality";  // legacy name
  MEDSEG_CHECK_FILE(j.contains(ch_key) && j.at(ch_key).is_object() && !j.at(ch_key).empty(), source,
                    "missing or empty 'channel_names'");
  std::vector<std::pair<long, std::string>> channels;
  for (const auto& [k, v] : j.at(ch_key).items()) {
    MEDSEG_CHECK_FILE(is_index(k) && v.is_string(), source,
                      "'channel_names' must map \"0\", \"1\", ... to names (bad entry '", k, "')");
    channels.emplace_back(std::stol(k), v.get<std::string>());
  }
  std::sort(channels.begin(), channels.end());
  std::vector<std::string> names;
  for (std::size_t i = 0; i < channels.size(); ++i) {
    MEDSEG_CHECK_FILE(channels[i].first == static_cast<long>(i), source, "'channel_names' keys must be 0..",
                      channels.size() - 1);
    names.push_back(channels[i].second);
  }
  return names;
}

}  // namespace

DatasetJsonInput dataset_json_from_json(const json& j, const std::string& source) {
  MEDSEG_CHECK_FILE(j.is_object(), source, "dataset.json must be a JSON object");
  DatasetJsonInput d;
  d.source = source;
  d.raw = j;
  d.channel_names = channel_names_from_json(j, source);
  MEDSEG_CHECK_FILE(j.contains("labels") && j.at("labels").is_object() && j.at("labels").size() >= 2, source,
                    "'labels' must map at least background and one class");
  d.num_labels = static_cast<int>(j.at("labels").size());
  MEDSEG_CHECK_FILE(
      j.contains("numTraining") && j.at("numTraining").is_number_integer() && j.at("numTraining").get<int64_t>() >= 1,
      source, "'numTraining' must be a positive integer");
  d.num_training = j.at("numTraining").get<int64_t>();
  MEDSEG_CHECK_FILE(j.contains("file_ending") && j.at("file_ending").is_string(), source, "missing 'file_ending'");
  d.file_ending = j.at("file_ending").get<std::string>();
  if (j.contains("overwrite_image_reader_writer") && j.at("overwrite_image_reader_writer").is_string() &&
      j.at("overwrite_image_reader_writer").get<std::string>() != "None")
    d.overwrite_image_reader_writer = j.at("overwrite_image_reader_writer").get<std::string>();
  return d;
}

DatasetJsonInput load_dataset_json(const std::string& path) { return dataset_json_from_json(read_json(path), path); }

}  // namespace medseg::planning
