#include "postprocessing/postprocessing.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <type_traits>

#include "core/error.h"
#include "core/path_overlap.h"
#include "core/json_object_reader.h"
#include "core/output_folder.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "io/image_folder.h"
#include "io/image_io.h"
#include "postprocessing/components.h"

namespace fs = std::filesystem;

namespace medseg::postprocessing {
namespace {

// nnU-Net's name for the one step kind, kept so its users recognise the file.
constexpr const char* kKeepLargest = "remove_all_but_largest_component_from_segmentation";
constexpr const char* kFormat = "medseg.postprocessing";
constexpr int kVersion = 1;

template <class T>
void keep_largest(T* seg, const std::array<int64_t, 3>& shape, const std::vector<int>& values) {
  const size_t n = static_cast<size_t>(shape[0] * shape[1] * shape[2]);
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i)
    mask[i] = std::find(values.begin(), values.end(), static_cast<int64_t>(seg[i])) != values.end();
  const std::vector<uint8_t> keep = largest_component(mask, shape);
  for (size_t i = 0; i < n; ++i)
    if (mask[i] && !keep[i]) seg[i] = 0;
}

// labels_or_regions: a label, a region (a list of labels) or a list of labels and regions, as nnU-Net
// writes it; the mask is the union either way. `depth` counts the lists around `j`: a list inside a
// region is no format nnU-Net writes, and is refused rather than flattened.
void collect_values(const json& j, std::vector<int>& out, const std::string& source, const std::string& what,
                    int depth = 0) {
  if (j.is_number()) {
    const int v = json_as<int>(j, what, source);  // 4294967297 is no label, not label 1
    MEDSEG_CHECK_FILE(v > 0, source, "labels_or_regions holds ", v, " (only foreground labels > 0)");
    out.push_back(v);
  } else if (j.is_array() && depth < 2) {
    for (size_t i = 0; i < j.size(); ++i) collect_values(j[i], out, source, concat(what, "[", i, "]"), depth + 1);
  } else if (j.is_array()) {
    throw FileError(source, what + " is " + j.dump() +
                                ": a region holds labels, not lists (labels_or_regions is a "
                                "label, a region or a list of labels and regions)");
  } else {
    throw FileError(source, "labels_or_regions must be a label, a region (list) or a list of them, not " + j.dump());
  }
}

json values_json(const std::vector<int>& v) { return v.size() == 1 ? json(v[0]) : json(v); }

}  // namespace

Volume apply_postprocessing(const Volume& segmentation, const std::vector<KeepLargestComponent>& steps) {
  Volume out = segmentation;
  visit_pixels(out, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    if constexpr (std::is_floating_point_v<T>) {
      throw Error("postprocessing needs an integer label map, got floating-point voxels");
    } else {
      for (const auto& s : steps) keep_largest(p, out.shape(), s.values);
    }
  });
  return out;
}

json to_json(const Postprocessing& pp) {
  json fns = json::array(), kwargs = json::array();
  for (const auto& s : pp.steps) {
    fns.push_back(kKeepLargest);
    kwargs.push_back({{"labels_or_regions", values_json(s.values)}});
  }
  return {{"format", kFormat},
          {"version", kVersion},
          {"file_ending", pp.file_ending},
          {"postprocessing_fns", fns},
          {"postprocessing_kwargs", kwargs},
          {"input_folder", pp.before},
          {"postprocessed", pp.after}};
}

Postprocessing postprocessing_from_json(const json& j, const std::string& source) {
  MEDSEG_CHECK_FILE(j.is_object(), source, "not a postprocessing.json (expected a JSON object)");
  MEDSEG_CHECK_FILE(!j.contains("format") || j.at("format") == kFormat, source, "format is ", j.at("format").dump(),
                    ", expected \"", kFormat, "\"");
  MEDSEG_CHECK_FILE(
      !j.contains("version") || (j.at("version").is_number_integer() && j.at("version").get<int>() <= kVersion), source,
      "version ", j.at("version").dump(), " is newer than this medseg reads (", kVersion, ")");
  for (const char* key : {"postprocessing_fns", "postprocessing_kwargs"})
    MEDSEG_CHECK_FILE(j.contains(key) && j.at(key).is_array(), source, "missing list '", key,
                      "': not a postprocessing.json");
  const json& fns = j.at("postprocessing_fns");
  const json& kwargs = j.at("postprocessing_kwargs");
  MEDSEG_CHECK_FILE(fns.size() == kwargs.size(), source, fns.size(), " postprocessing_fns but ", kwargs.size(),
                    " postprocessing_kwargs");
  Postprocessing pp;
  pp.file_ending = io::file_ending_from_json(j, source, pp.file_ending);  // names the written files
  for (size_t i = 0; i < fns.size(); ++i) {
    MEDSEG_CHECK_FILE(fns[i] == kKeepLargest, source, "unknown postprocessing step ", fns[i].dump(), " (medseg knows ",
                      kKeepLargest, ")");
    MEDSEG_CHECK_FILE(kwargs[i].is_object() && kwargs[i].contains("labels_or_regions"), source, "step ", i,
                      " has no labels_or_regions");
    KeepLargestComponent s;
    collect_values(kwargs[i].at("labels_or_regions"), s.values, source,
                   concat("postprocessing_kwargs[", i, "].labels_or_regions"));
    MEDSEG_CHECK_FILE(!s.values.empty(), source, "step ", i, " has no labels");
    pp.steps.push_back(std::move(s));
  }
  pp.before = j.value("input_folder", json::object());
  pp.after = j.value("postprocessed", json::object());
  return pp;
}

void check_declared_labels(const Postprocessing& pp, const std::vector<io::LabelDef>& labels,
                           const std::string& source) {
  const std::vector<int> foreground = io::foreground_labels(labels);
  for (size_t i = 0; i < pp.steps.size(); ++i)
    for (int v : pp.steps[i].values)
      MEDSEG_CHECK_FILE(std::binary_search(foreground.begin(), foreground.end(), v), source, "step ", i,
                        " keeps label ", v,
                        ", which dataset.json does not declare (foreground labels: ", json(foreground).dump(), ")");
}

Postprocessing read_postprocessing(const std::string& path, const std::vector<io::LabelDef>& labels) {
  Postprocessing pp = postprocessing_from_json(read_json(path), path);
  check_declared_labels(pp, labels, path);
  return pp;
}

void write_postprocessing(const std::string& path, const Postprocessing& pp) { write_json(path, to_json(pp)); }

int64_t apply_postprocessing_to_folder(const std::string& input_folder, const std::string& output_folder,
                                       const Postprocessing& pp, int threads) {
  MEDSEG_CHECK_FILE(fs::is_directory(input_folder), input_folder, "input folder not found");
  // Postprocessing writes to another folder, never over or around the predictions. A folder inside them is
  // nnU-Net's own layout (determine_postprocessing writes PRED/postprocessed) and harmless: only the input's
  // top-level files are read, and nothing there is replaced.
  const std::string overlap = path_overlap_problem(output_folder, input_folder, "input folder");
  MEDSEG_CHECK_FILE(overlap.empty() || overlap.rfind("lies inside", 0) == 0, output_folder, overlap,
                    "; postprocessing writes to another folder and never overwrites predictions");
  const std::vector<std::string> names = io::files_with_ending(input_folder, pp.file_ending);
  MEDSEG_CHECK_FILE(!names.empty(), input_folder, "holds no ", pp.file_ending, " segmentation");
  // A failure (or Ctrl-C) on any case removes the output folder this call created: a half-written
  // folder would pass for postprocessed predictions.
  NewFolderGuard guard(output_folder);
  ProgressBar bar("postprocess", static_cast<int64_t>(names.size()));
  parallel_for(static_cast<int64_t>(names.size()), threads, [&](int64_t i) {
    const std::string in = (fs::path(input_folder) / names[static_cast<size_t>(i)]).string();
    Volume seg = io::read_image(in);
    try {
      seg = apply_postprocessing(seg, pp.steps);
    } catch (const FileError&) { throw; } catch (const Error& e) {
      throw FileError(in, e.what());
    }
    io::write_image((fs::path(output_folder) / names[static_cast<size_t>(i)]).string(), seg);
    bar.tick();
  });
  bar.finish();
  io::copy_dataset_jsons(input_folder, output_folder);  // as nnU-Net: the folder stays self-describing
  guard.keep();
  return static_cast<int64_t>(names.size());
}

}  // namespace medseg::postprocessing
