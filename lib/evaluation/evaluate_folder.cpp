#include "evaluation/evaluate_folder.h"

#include <algorithm>
#include <filesystem>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "core/parallel.h"
#include "core/path_overlap.h"
#include "core/progress.h"
#include "core/strings.h"
#include "evaluation/surface_distance.h"
#include "io/case_loader.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "io/label_check.h"

namespace fs = std::filesystem;

namespace medseg::evaluation {

void labels_from_dataset_json(const ordered_json& ds, EvaluateOptions& o, const std::string& source) {
  // io's parser is the one reader of dataset.json labels (and refuses what nnU-Net refuses).
  const std::vector<io::LabelDef> defs = io::labels_from_json(ds, source);
  o.labels.clear();
  o.label_keys.clear();
  o.declared.clear();
  o.file_ending = io::file_ending_from_json(ds, source, o.file_ending);
  o.ignore_label = io::ignore_label(defs);
  // A top-level "ignore" (older medseg datasets) is read as io's DatasetInfo::label_values reads it.
  if (!o.ignore_label && ds.contains("ignore") && ds.at("ignore").is_number_integer()) {
    o.ignore_label = ds.at("ignore").get<int>();
    o.declared.push_back(*o.ignore_label);
  }
  for (const auto& d : defs) {
    o.declared.insert(o.declared.end(), d.values.begin(), d.values.end());
    if (d.name == "ignore" || (d.values.size() == 1 && d.values[0] == 0)) continue;  // not scored
    std::string key;
    if (d.values.size() == 1) {
      key = std::to_string(d.values[0]);
    } else {  // nnU-Net's key for a region: the tuple as Python prints it
      key = "(";
      for (size_t i = 0; i < d.values.size(); ++i) key += (i ? ", " : "") + std::to_string(d.values[i]);
      key += ")";
    }
    o.labels.push_back(d.values);
    o.label_keys.push_back(key);
  }
  // nnU-Net scores regions in the order dataset.json lists them, plain labels by value
  // (LabelManager.foreground_regions / foreground_labels).
  if (std::none_of(defs.begin(), defs.end(), [](const io::LabelDef& d) { return d.values.size() != 1; })) {
    std::vector<std::pair<std::vector<int>, std::string>> by_value;
    for (size_t i = 0; i < o.labels.size(); ++i) by_value.emplace_back(o.labels[i], o.label_keys[i]);
    std::sort(by_value.begin(), by_value.end());
    for (size_t i = 0; i < by_value.size(); ++i) std::tie(o.labels[i], o.label_keys[i]) = by_value[i];
  }
  std::sort(o.declared.begin(), o.declared.end());
  o.declared.erase(std::unique(o.declared.begin(), o.declared.end()), o.declared.end());
}

static std::vector<int32_t> as_int32(const Volume& v) {
  std::vector<int32_t> out(static_cast<size_t>(v.numel()));
  visit_pixels(v, [&](const auto* p) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(p[i]);
  });
  return out;
}

CaseResult evaluate_volumes(const Volume& ref, const Volume& pred, const EvaluateOptions& o,
                            const std::string& ref_file, const std::string& pred_file) {
  const std::string grid = io::grid_mismatch(ref, pred);
  MEDSEG_CHECK_FILE(grid.empty(), pred_file, "not on the grid of the reference ", ref_file, ": ", grid,
                    " (reference vs prediction)");
  if (!o.declared.empty())
    for (const auto* f : {&ref_file, &pred_file}) {
      const std::string bad = io::undeclared_labels_problem(f == &ref_file ? ref : pred, o.declared);
      MEDSEG_CHECK_FILE(bad.empty(), *f, bad);
    }
  const auto r = as_int32(ref), p = as_int32(pred);
  CaseResult c{ref_file, pred_file, count_labels(r.data(), p.data(), ref.numel(), o.labels, o.ignore_label)};
  if (o.hd95) {
    for (size_t l = 0; l < o.labels.size(); ++l) {
      if (c.per_label[l].tp + c.per_label[l].fn == 0 || c.per_label[l].tp + c.per_label[l].fp == 0) continue;
      std::vector<uint8_t> a(r.size()), b(r.size());
      for (size_t i = 0; i < r.size(); ++i) {
        a[i] = std::count(o.labels[l].begin(), o.labels[l].end(), r[i]) > 0;
        b[i] = std::count(o.labels[l].begin(), o.labels[l].end(), p[i]) > 0;
      }
      c.per_label[l].hd95 = hd95(a, b, ref.shape(), ref.geometry().spacing_zyx());
    }
  }
  return c;
}

static CaseResult evaluate_case(const std::string& ref_file, const std::string& pred_file, const EvaluateOptions& o) {
  return evaluate_volumes(io::read_label(ref_file), io::read_label(pred_file), o, ref_file, pred_file);
}

json evaluate_folder(const std::string& ref_folder, const std::string& pred_folder, const EvaluateOptions& o) {
  MEDSEG_CHECK_FILE(fs::is_directory(ref_folder), ref_folder, "reference folder not found");
  MEDSEG_CHECK_FILE(fs::is_directory(pred_folder), pred_folder, "prediction folder not found");
  MEDSEG_CHECK(!o.labels.empty(), "no labels to evaluate");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(pred_folder)) {
    const std::string n = e.path().filename().string();
    if (n.size() > o.file_ending.size() && ends_with(n, o.file_ending)) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  if (!o.chill)
    for (const auto& e : fs::directory_iterator(ref_folder)) {
      const std::string n = e.path().filename().string();
      MEDSEG_CHECK_FILE(n.size() <= o.file_ending.size() || !ends_with(n, o.file_ending) ||
                            std::binary_search(names.begin(), names.end(), n),
                        (fs::path(pred_folder) / n).string(), "prediction missing for reference ", e.path().string(),
                        " (use --chill to evaluate the present ones)");
    }
  std::vector<CaseResult> results(names.size());
  ProgressBar bar("evaluate", static_cast<int64_t>(names.size()));
  parallel_for(static_cast<int64_t>(names.size()), o.threads, [&](int64_t i) {
    const std::string ref = (fs::path(ref_folder) / names[static_cast<size_t>(i)]).string();
    MEDSEG_CHECK_FILE(fs::exists(ref), ref, "reference segmentation not found for prediction ",
                      names[static_cast<size_t>(i)]);
    results[static_cast<size_t>(i)] =
        evaluate_case(ref, (fs::path(pred_folder) / names[static_cast<size_t>(i)]).string(), o);
    bar.tick();
  });
  bar.finish();
  return summary_json(results, o.label_keys);
}

void check_summary_path(const std::string& summary, const std::string& reference_folder,
                        const std::string& prediction_folder, const std::string& file_ending) {
  check_output_apart(summary, reference_folder, "reference folder");
  MEDSEG_CHECK_FILE(path_overlap_problem(summary, prediction_folder, "").rfind("contains", 0) != 0, summary,
                    "contains the prediction folder (", prediction_folder, "); write the summary beside it");
  MEDSEG_CHECK_FILE(!ends_with(summary, file_ending) && !ends_with(summary, ".nii") && !ends_with(summary, ".nii.gz"),
                    summary, "ends like a segmentation (", file_ending, "); the summary is a .json file");
  MEDSEG_CHECK_FILE(!fs::is_directory(summary), summary, "is a folder; the summary is a .json file");
}

}  // namespace medseg::evaluation
