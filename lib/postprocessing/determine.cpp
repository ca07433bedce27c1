#include "postprocessing/determine.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/json_io.h"
#include "core/parallel.h"
#include "io/image_folder.h"
#include "io/image_io.h"

namespace fs = std::filesystem;

namespace medseg::postprocessing {
namespace {

using evaluation::CaseResult;
using evaluation::EvaluateOptions;

struct CasePair {
  std::string reference, prediction;
};

double dice_of(const json& entry) {
  const json& d = entry.at("Dice");
  return d.is_null() ? std::nan("") : d.get<double>();
}

// The summary (nnU-Net's summary.json) of every case with `steps` applied to its prediction.
json score(const std::vector<CasePair>& cases, const std::vector<KeepLargestComponent>& steps,
           const EvaluateOptions& o) {
  std::vector<CaseResult> results(cases.size());
  parallel_for(static_cast<int64_t>(cases.size()), o.threads, [&](int64_t i) {
    const CasePair& c = cases[static_cast<size_t>(i)];
    const Volume pred = apply_postprocessing(io::read_label(c.prediction), steps);
    results[static_cast<size_t>(i)] =
        evaluation::evaluate_volumes(io::read_label(c.reference), pred, o, c.reference, c.prediction);
  });
  return evaluation::summary_json(results, o.label_keys);
}

json means_of(const json& summary) {
  return {{"foreground_mean", summary.at("foreground_mean")}, {"mean", summary.at("mean")}};
}

std::string dice_str(double d) { return std::isnan(d) ? "n/a" : fmt::format("{:.5f}", d); }

// The scored cases of the baseline summary; warns when references lack a prediction.
std::vector<CasePair> scored_cases(const json& baseline, const DetermineOptions& o, const EvaluateOptions& eval) {
  std::vector<CasePair> cases;
  for (const auto& c : baseline.at("metric_per_case"))
    cases.push_back({c.at("reference_file").get<std::string>(), c.at("prediction_file").get<std::string>()});
  MEDSEG_CHECK_FILE(!cases.empty(), o.predictions, "holds no ", eval.file_ending, " prediction to score");
  const auto refs = static_cast<int64_t>(io::files_with_ending(o.references, eval.file_ending).size());
  if (refs > static_cast<int64_t>(cases.size()))
    spdlog::warn(
        "{} of {} reference(s) have no prediction in {}: postprocessing should be determined on all "
        "cross-validation cases",
        refs - static_cast<int64_t>(cases.size()), refs, o.predictions);
  return cases;
}

// Step 1: the largest component of the whole foreground, kept when it raises the foreground Dice and lowers no
// label's. Returns the summary after it (the baseline when not kept).
json try_whole_foreground(const std::vector<CasePair>& cases, const json& baseline, const EvaluateOptions& eval,
                          Postprocessing& pp) {
  KeepLargestComponent all_fg;
  for (const int v : eval.declared)
    if (v != 0 && (!eval.ignore_label || v != *eval.ignore_label)) all_fg.values.push_back(v);
  if (all_fg.values.empty()) return baseline;
  const json candidate = score(cases, {all_fg}, eval);
  bool take = dice_of(candidate.at("foreground_mean")) > dice_of(baseline.at("foreground_mean"));
  for (const auto& key : eval.label_keys)
    if (dice_of(candidate.at("mean").at(key)) < dice_of(baseline.at("mean").at(key))) take = false;
  spdlog::info("keep the largest foreground component: mean foreground Dice {} -> {}: {}",
               dice_str(dice_of(baseline.at("foreground_mean"))), dice_str(dice_of(candidate.at("foreground_mean"))),
               take ? "kept" : "not kept");
  if (!take) return baseline;
  pp.steps.push_back(all_fg);
  return candidate;
}

// Step 2: per label or region, on top of what was kept, each kept when it raises that label's Dice. Returns the
// summary after the kept steps.
json try_each_label(const std::vector<CasePair>& cases, json current, const EvaluateOptions& eval, Postprocessing& pp) {
  if (eval.labels.size() <= 1) return current;
  for (size_t l = 0; l < eval.labels.size(); ++l) {
    std::vector<KeepLargestComponent> steps = pp.steps;
    steps.push_back({eval.labels[l]});
    const json candidate = score(cases, steps, eval);
    const std::string& key = eval.label_keys[l];
    const double before = dice_of(current.at("mean").at(key)), after = dice_of(candidate.at("mean").at(key));
    const bool take = after > before;
    spdlog::info("keep the largest component of {}: mean Dice {} -> {}: {}", key, dice_str(before), dice_str(after),
                 take ? "kept" : "not kept");
    if (take) {
      pp.steps = steps;
      current = candidate;
    }
  }
  return current;
}

}  // namespace

Postprocessing determine_postprocessing(const DetermineOptions& o) {
  EvaluateOptions eval = o.evaluation;
  eval.chill = true;  // as nnU-Net: score the cases that have a prediction, warn about the rest
  // The full check (grids, declared labels, missing references) happens here, once.
  const json baseline =
      o.baseline.is_null() ? evaluation::evaluate_folder(o.references, o.predictions, eval) : o.baseline;
  const std::vector<CasePair> cases = scored_cases(baseline, o, eval);
  Postprocessing pp;
  pp.file_ending = eval.file_ending;
  pp.before = means_of(baseline);
  const json current = try_each_label(cases, try_whole_foreground(cases, baseline, eval, pp), eval, pp);
  pp.after = means_of(current);
  if (o.keep_postprocessed) {
    const std::string out = (fs::path(o.predictions) / "postprocessed").string();
    apply_postprocessing_to_folder(o.predictions, out, pp, eval.threads);
    write_json((fs::path(out) / "summary.json").string(), current);
  }
  write_postprocessing((fs::path(o.predictions) / "postprocessing.json").string(), pp);
  return pp;
}

}  // namespace medseg::postprocessing
