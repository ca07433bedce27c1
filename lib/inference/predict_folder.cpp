#include "inference/predict_folder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "distributed/same_everywhere.h"
#include "inference/case_inputs.h"
#include "inference/dicom_output.h"
#include "inference/input_digest.h"
#include "inference/output_collisions.h"
#include "inference/overlays.h"
#include "inference/zipped_cases.h"

namespace fs = std::filesystem;

namespace medseg::inference {

std::optional<std::vector<postprocessing::KeepLargestComponent>> folder_postprocessing(const std::string& model_folder,
                                                                                       const ModelFolder& model) {
  const std::string file = (fs::path(model_folder) / "postprocessing.json").string();
  if (!fs::exists(file)) return std::nullopt;
  return postprocessing::read_postprocessing(file, model.dataset.labels).steps;
}

std::string sibling_model_folder(const std::string& folder, const std::string& configuration) {
  const fs::path p = fs::path(folder).lexically_normal();
  const std::string name = p.has_filename() ? p.filename().string() : p.parent_path().filename().string();
  const fs::path parent = p.has_filename() ? p.parent_path() : p.parent_path().parent_path();
  const auto a = name.find("__"), b = name.rfind("__");
  if (a == std::string::npos || a == b) return "";
  return (parent / (name.substr(0, b + 2) + configuration)).string();
}

std::optional<RunSummary> predict_folder(ModelFolder model, const std::string& model_folder, const FolderRun& run,
                                         const distributed::World& world, const PredictorOptions& po, RunOptions ro) {
  const std::string ending = model.dataset.file_ending;
  if (auto steps = run.postprocessing ? folder_postprocessing(model_folder, model) : std::nullopt) {
    ro.postprocessing = std::move(*steps);
    spdlog::info("postprocessing from {}: {} step(s) (--disable_postprocessing skips it)",
                 (fs::path(model_folder) / "postprocessing.json").string(), ro.postprocessing.size());
  }
  const json plans_json = model.plans_json;
  const ordered_json dataset_json = model.dataset_json;  // the file's order: region outputs follow it
  Predictor predictor(std::move(model), po);
  auto all_cases = collect_case_inputs(run.inputs, ending, static_cast<int>(predictor.image_channels()));
  ZippedCases zipped;  // lives until the cases are predicted
  zipped.expand(all_cases, static_cast<int>(predictor.image_channels()));
  if (predictor.is_cascade()) {
    MEDSEG_CHECK(!run.prev_stage.empty(), "configuration '", predictor.model().configuration,
                 "' is a cascade stage: pass -prev_stage_predictions FOLDER or --prev_stage_model FOLDER");
    attach_previous_stage(all_cases, run.prev_stage, ending);
  }
  const auto cases = select_part(all_cases, run.num_parts, run.part_id);
  if (run.num_parts > 1)
    spdlog::info("part {} of {} (counting from 0): {} of {} case(s)", run.part_id, run.num_parts, cases.size(),
                 all_cases.size());

  ro.output_folder = run.output;
  ro.file_ending = ending;
  check_output_format(ro.output_format);
  check_series_uid_cases(ro, all_cases);
  if (std::any_of(cases.begin(), cases.end(),
                  [&](const CaseInput& c) { return dicom_output(c, ro) != DicomOutput::None; }))
    ro.dicom_seg = dicom_seg_info(predictor.model(), predictor.labels(), ro.dicom_seg.version);
  const std::string dataset_copy = (fs::path(run.output) / "dataset.json").string();
  const std::string plans_copy = (fs::path(run.output) / "plans.json").string();
  refuse_overwriting_inputs(all_cases, cases, ro, {dataset_copy, plans_copy});  // before any write
  if (world.distributed())  // each host may read its own copy of the inputs: the same bytes on every rank?
    distributed::check_same_lines(*po.group, input_digests(cases), "reads other input images than", "case",
                                  "every rank must read the same input images");
  if (ro.overlays) create_overlay_folder(run.output);  // a folder in the way fails before any write
  if (world.rank == 0) {
    fs::create_directories(run.output);
    write_ordered_json(dataset_copy, dataset_json);
    write_json(plans_copy, plans_json);
  }
  const RunSummary s = predict_cases(predictor, cases, ro);
  if (world.rank != 0) return std::nullopt;  // rank 0 wrote the outputs and reports every failure
  return s;
}

}  // namespace medseg::inference
