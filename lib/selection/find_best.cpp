#include "selection/find_best.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/ordered_json_io.h"
#include "core/output_folder.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core/strings.h"
#include "evaluation/evaluate_folder.h"
#include "io/image_folder.h"
#include "postprocessing/crossval.h"
#include "postprocessing/determine.h"
#include "selection/ensemble.h"

#include <spdlog/spdlog.h>

namespace fs = std::filesystem;

namespace medseg::selection {
namespace {

struct Candidate {
  std::string name;                 // "nnUNetTrainer__nnUNetPlans__3d_fullres" or "ensemble___A___B"
  std::vector<std::string> models;  // the model folder(s)
  std::vector<std::string> configurations;
  std::string folder;  // its cross-validation predictions
  json summary;        // of `folder` against the references
  double dice = std::nan("");
};

void score(Candidate& c, const std::string& references, const evaluation::EvaluateOptions& eval) {
  c.summary = evaluation::evaluate_folder(references, c.folder, eval);
  write_json((fs::path(c.folder) / "summary.json").string(), c.summary);
  const json& d = c.summary.at("foreground_mean").at("Dice");
  c.dice = d.is_null() ? std::nan("") : d.get<double>();
  spdlog::info("{}: mean foreground Dice {:.5f}", c.name, c.dice);
}

// The crossval_results_folds_* folders of a model folder, by name.
std::set<std::string> crossval_folders(const std::string& model) {
  std::set<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(model, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("crossval_results_folds", 0) == 0)
      names.insert(it->path().filename().string());
  return names;
}

// What ensemble_folders reads: without these files a pair cannot be ensembled.
bool has_probabilities(const std::string& folder) {
  return !io::files_with_ending(folder, "_probabilities.npy").empty();
}

std::string instructions(const FindBestOptions& o, const std::string& dataset, const Candidate& best,
                         const std::string& pp_file, const std::vector<std::string>& folds) {
  std::ostringstream s;
  s << "Best on the cross-validation of " << dataset << ": " << best.name << " (mean foreground Dice " << best.dice
    << ")\n\nRun inference like this:\n\n";
  const std::string f = " -f " + join(folds, " ");
  if (best.configurations.size() == 1) {
    s << "medseg_predict -d " << dataset << " -i INPUT_FOLDER -o OUTPUT_FOLDER -c " << best.configurations[0] << " -tr "
      << o.trainer << " -p " << o.plans << f << "\n\n"
      << "The model folder holds the chosen postprocessing (" << best.models[0]
      << "/postprocessing.json): medseg_predict applies it.\n";
    return s.str();
  }
  for (size_t i = 0; i < best.configurations.size(); ++i)
    s << "medseg_predict -d " << dataset << " -i INPUT_FOLDER -o OUTPUT_FOLDER_MODEL_" << i + 1 << " -c "
      << best.configurations[i] << " -tr " << o.trainer << " -p " << o.plans << f
      << " --save_probabilities --disable_postprocessing\n";
  s << "\nThe following command ensembles the predictions:\n\nmedseg_ensemble -i";
  for (size_t i = 0; i < best.configurations.size(); ++i) s << " OUTPUT_FOLDER_MODEL_" << i + 1;
  s << " -o OUTPUT_FOLDER_ENSEMBLE -np 8\n\nPostprocessing:\n\nmedseg_apply_postprocessing -i OUTPUT_FOLDER_ENSEMBLE "
    << "-o OUTPUT_FOLDER_PP -pp_json " << pp_file << "\n";
  return s.str();
}

// nnU-Net's default list, narrowed to the configurations the plans define: a dataset planned
// without 3d_lowres is not told to train 3d_lowres first.
std::vector<std::string> default_configurations(const std::string& preprocessed_dataset, const std::string& plans) {
  const std::string file = (fs::path(preprocessed_dataset) / (plans + ".json")).string();
  MEDSEG_CHECK_FILE(fs::exists(file), file,
                    "not found: without the plans, name the configurations to compare (-c 2d 3d_fullres ...)");
  const json p = read_json(file);
  const json& configs = p.is_object() && p.contains("configurations") ? p.at("configurations") : json();
  MEDSEG_CHECK_FILE(configs.is_object(), file, "key 'configurations' is not an object");
  std::vector<std::string> out;
  for (const char* c : {"2d", "3d_fullres", "3d_lowres", "3d_cascade_fullres"})
    if (configs.contains(c)) out.push_back(c);
  MEDSEG_CHECK_FILE(!out.empty(), file,
                    "defines none of 2d, 3d_fullres, 3d_lowres, 3d_cascade_fullres: name them with -c");
  return out;
}

// The names that become the model folders' names: single names, each configuration once (a
// configuration compared with itself would be "ensembled" with its own predictions).
void check_names(const FindBestOptions& o) {
  check_path_component(o.trainer, "trainer name (-tr)");
  check_path_component(o.plans, "plans name (-p)");
  for (const auto& c : o.configurations) check_path_component(c, "configuration (-c)");
  const auto twice = first_repeated(o.configurations);
  MEDSEG_CHECK(!twice, "-c ", join(o.configurations, " "), ": configuration '", *twice, "' is given twice");
}

// Where this run reads and writes: the dataset's results and preprocessed folders, and the references.
struct FindBestPaths {
  std::string results, dataset, references;
};

// Every model is checked before any output is written: a configuration that was not trained fails here, not after
// the others' crossval_results_folds_* folders were made. Reads the labels the evaluation needs.
std::vector<Candidate> trained_models(const FindBestOptions& o, const FindBestPaths& p, bool default_list,
                                      evaluation::EvaluateOptions& eval) {
  std::vector<Candidate> candidates;
  for (const auto& c : o.configurations) {
    Candidate m;
    m.name = o.trainer + "__" + o.plans + "__" + c;
    m.models = {(fs::path(p.results) / p.dataset / m.name).string()};
    m.configurations = {c};
    const std::string dj = (fs::path(m.models[0]) / "dataset.json").string();
    MEDSEG_CHECK_FILE(fs::exists(dj), m.models[0], "no trained model here (dataset.json missing): train ", c,
                      " first, or leave it out of -c",
                      (default_list ? " (by default -c is every configuration of " + o.plans + ": " +
                                          join(o.configurations, " ") + ")"
                                    : ""));
    evaluation::labels_from_dataset_json(read_ordered_json(dj), eval, dj);
    candidates.push_back(m);
  }
  return candidates;
}

// Each model's validation predictions gathered into its crossval folder (made folders go to `made`); returns the
// folds, the first model's (checked, or found), which the others must have.
std::vector<std::string> gather_all(std::vector<Candidate>& candidates, std::vector<std::string> folds,
                                    const FindBestPaths& p, const std::string& file_ending,
                                    std::vector<std::unique_ptr<AdoptedFolder>>& made) {
  for (auto& m : candidates) {
    const std::set<std::string> before = crossval_folders(m.models[0]);
    const auto cv = postprocessing::gather_crossval(m.models[0], folds, p.references, file_ending);
    if (!before.count(fs::path(cv.folder).filename().string()))
      made.push_back(std::make_unique<AdoptedFolder>(cv.folder));
    folds = cv.folds;
    m.folder = cv.folder;
  }
  return folds;
}

// The ensemble of two scored models, made in the dataset's ensembles/ folder and scored, or nullopt (with a warning)
// when either saved no probabilities.
std::optional<Candidate> ensemble_of(const Candidate& a, const Candidate& b, const std::vector<std::string>& folds,
                                     const FindBestPaths& p, const evaluation::EvaluateOptions& eval, int threads,
                                     std::vector<std::unique_ptr<AdoptedFolder>>& made) {
  if (!has_probabilities(a.folder) || !has_probabilities(b.folder)) {
    spdlog::warn(
        "no ensemble of {} and {}: their validation saved no probabilities (train with --npz, or "
        "medseg_train ... --val --npz)",
        a.name, b.name);
    return std::nullopt;
  }
  Candidate e;
  e.name = "ensemble___" + a.name + "___" + b.name + "___" + join(folds, "_");
  e.models = {a.models[0], b.models[0]};
  e.configurations = {a.configurations[0], b.configurations[0]};
  e.folder = (fs::path(p.results) / p.dataset / "ensembles" / e.name).string();
  EnsembleOptions eo;
  eo.inputs = {a.folder, b.folder};
  eo.output = e.folder;
  eo.file_ending = eval.file_ending;
  eo.threads = threads;
  const bool existed = fs::exists(e.folder);
  if (existed) fs::remove_all(e.folder);  // ours, rebuilt from the current folds
  ensemble_folders(eo);
  if (!existed) made.push_back(std::make_unique<AdoptedFolder>(e.folder));
  score(e, p.references, eval);
  return e;
}

// Every pair of the single models, ensembled and scored, appended to the candidates.
void add_ensembles(std::vector<Candidate>& candidates, const std::vector<std::string>& folds, const FindBestPaths& p,
                   const evaluation::EvaluateOptions& eval, int threads,
                   std::vector<std::unique_ptr<AdoptedFolder>>& made) {
  const fs::path ensembles = fs::path(p.results) / p.dataset / "ensembles";
  if (!fs::exists(ensembles)) made.push_back(std::make_unique<AdoptedFolder>(ensembles.string()));
  const size_t singles = candidates.size();
  for (size_t i = 0; i < singles; ++i)
    for (size_t j = i + 1; j < singles; ++j)
      if (auto e = ensemble_of(candidates[i], candidates[j], folds, p, eval, threads, made))
        candidates.push_back(std::move(*e));
}

// inference_information.json: every model considered, and the best with its postprocessing.
json inference_information(const std::vector<Candidate>& candidates, const Candidate& b, const FindBestPaths& p,
                           const std::vector<std::string>& folds, const postprocessing::Postprocessing& pp,
                           const std::string& pp_file) {
  json info = {{"dataset", p.dataset}, {"folds", folds}, {"considered_models", json::array()}};
  for (const auto& c : candidates)
    info["considered_models"].push_back({{"name", c.name},
                                         {"configurations", c.configurations},
                                         {"crossval_folder", c.folder},
                                         {"foreground_mean_dice", std::isnan(c.dice) ? json() : json(c.dice)}});
  info["best_model_or_ensemble"] = {{"name", b.name},
                                    {"configurations", b.configurations},
                                    {"model_folders", b.models},
                                    {"postprocessing_file", pp_file},
                                    {"postprocessing_steps", pp.steps.size()},
                                    {"foreground_mean_dice_postprocessed", pp.after.at("foreground_mean").at("Dice")}};
  return info;
}

}  // namespace

json find_best_configuration(const FindBestOptions& in) {
  FindBestOptions o = in;
  check_names(o);
  FindBestPaths p;
  p.results = root_folder(Root::Results);
  p.dataset = find_dataset_name(p.results, o.dataset);
  const fs::path preprocessed =
      fs::path(root_folder(Root::Preprocessed)) / find_dataset_name(root_folder(Root::Preprocessed), o.dataset);
  p.references = (preprocessed / "gt_segmentations").string();
  const bool default_list = o.configurations.empty();
  if (default_list) o.configurations = default_configurations(preprocessed.string(), o.plans);
  check_names(o);

  evaluation::EvaluateOptions eval;
  std::vector<Candidate> candidates = trained_models(o, p, default_list, eval);
  std::vector<std::unique_ptr<AdoptedFolder>> made;  // go again if a later step fails (or on Ctrl-C)
  const std::vector<std::string> folds = gather_all(candidates, o.folds, p, eval.file_ending, made);
  eval.threads = o.threads;
  eval.chill = true;
  for (auto& c : candidates) score(c, p.references, eval);
  if (o.ensembling && candidates.size() > 1) add_ensembles(candidates, folds, p, eval, o.threads, made);

  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].dice > candidates[best].dice) best = i;  // NaN never wins; ties keep the first
  const Candidate& b = candidates[best];
  spdlog::info("best: {} (mean foreground Dice {:.5f})", b.name, b.dice);

  postprocessing::DetermineOptions d;
  d.predictions = b.folder;
  d.references = p.references;
  d.evaluation = eval;
  d.baseline = b.summary;  // scored above with the same options
  const auto pp = postprocessing::determine_postprocessing(d);
  const std::string pp_file = (fs::path(b.folder) / "postprocessing.json").string();
  if (b.models.size() == 1)
    postprocessing::write_postprocessing((fs::path(b.models[0]) / "postprocessing.json").string(), pp);
  const json info = inference_information(candidates, b, p, folds, pp, pp_file);
  const fs::path out = fs::path(p.results) / p.dataset;
  write_json((out / "inference_information.json").string(), info);
  write_file_atomic((out / "inference_instructions.txt").string(), instructions(o, p.dataset, b, pp_file, folds));
  for (auto& f : made) f->keep();
  return info;
}

}  // namespace medseg::selection
