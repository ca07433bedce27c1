// medseg-app: itk
// medseg_predict: segment images with a trained model folder (nnUNetv2_predict's flags).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/progress.h"
#include "distributed/launch.h"
#include "distributed/process_group.h"
#include "distributed/same_everywhere.h"
#include "distributed/world.h"
#include "inference/case_inputs.h"
#include "inference/export.h"
#include "inference/input_digest.h"
#include "inference/model_folder.h"
#include "postprocessing/postprocessing.h"
#include "inference/output_collisions.h"
#include "inference/overlays.h"
#include "inference/predict_cases.h"
#include "inference/predictor.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// A rank of a sharded prediction: joins the others; rank 0 speaks for the run.
void join_ranks(const distributed::World& world, int timeout_s, bool threads_given, inference::PredictorOptions& po,
                bool& no_progress) {
  if (po.device == "cuda") po.device = "cuda:" + std::to_string(world.local_rank);
  if (!threads_given) {  // the host's cores shared between the local ranks
    const char* lws = std::getenv("LOCAL_WORLD_SIZE");
    po.torch_threads = std::max(1, cli::default_threads() / (lws ? std::max(1, std::atoi(lws)) : 1));
  }
  if (world.rank != 0) {
    spdlog::set_level(spdlog::level::warn);
    spdlog::set_pattern("[rank " + std::to_string(world.rank) + "] %l: %v");
    no_progress = true;
  }
  distributed::ProcessGroupOptions o;
  o.timeout = std::chrono::seconds(timeout_s);
  po.group = distributed::ProcessGroup::connect(world, o);
  spdlog::info("medseg_predict: {} ranks share every case's tiles ({}:{})", world.world_size, world.master_addr,
               world.master_port);
}

// The model folder of `configuration` beside `folder` (<Trainer>__<Plans>__<Configuration>): same
// trainer and plans. "" when the folder is not named that way.
std::string sibling_model_folder(const std::string& folder, const std::string& configuration) {
  const fs::path p = fs::path(folder).lexically_normal();
  const std::string name = p.has_filename() ? p.filename().string() : p.parent_path().filename().string();
  const fs::path parent = p.has_filename() ? p.parent_path() : p.parent_path().parent_path();
  const auto a = name.find("__"), b = name.rfind("__");
  if (a == std::string::npos || a == b) return "";
  return (parent / (name.substr(0, b + 2) + configuration)).string();
}

// One model over the inputs into `output`; `prev_stage`: a cascade's previous-stage predictions.
int predict_folder(inference::ModelFolder model, const std::string& model_folder, const std::vector<std::string>& inputs,
                   const std::string& output, const std::string& prev_stage, bool no_postprocessing, int num_parts,
                   int part_id, const distributed::World& world, const inference::PredictorOptions& po,
                   inference::RunOptions ro) {
  const std::string ending = model.dataset.file_ending;
  const std::string pp_file = (fs::path(model_folder) / "postprocessing.json").string();
  if (!no_postprocessing && fs::exists(pp_file)) {
    ro.postprocessing = postprocessing::read_postprocessing(pp_file, model.dataset.labels).steps;
    spdlog::info("postprocessing from {}: {} step(s) (--disable_postprocessing skips it)", pp_file,
                 ro.postprocessing.size());
  }
  const json plans_json = model.plans_json;
  const ordered_json dataset_json = model.dataset_json;  // the file's order: region outputs follow it
  inference::Predictor predictor(std::move(model), po);
  auto all_cases = inference::collect_case_inputs(inputs, ending, static_cast<int>(predictor.image_channels()));
  if (predictor.is_cascade()) {
    if (prev_stage.empty())
      throw Error("configuration '" + predictor.model().configuration +
                  "' is a cascade stage: pass -prev_stage_predictions FOLDER or --prev_stage_model FOLDER");
    inference::attach_previous_stage(all_cases, prev_stage, ending);
  }
  const auto cases = inference::select_part(all_cases, num_parts, part_id);
  if (num_parts > 1)
    spdlog::info("part {} of {} (counting from 0): {} of {} case(s)", part_id, num_parts, cases.size(), all_cases.size());

  ro.output_folder = output;
  ro.file_ending = ending;
  const std::string dataset_copy = (fs::path(output) / "dataset.json").string();
  const std::string plans_copy = (fs::path(output) / "plans.json").string();
  inference::refuse_overwriting_inputs(all_cases, cases, ro, {dataset_copy, plans_copy});  // before any write
  if (world.distributed())  // each host may read its own copy of the inputs: the same bytes on every rank?
    distributed::check_same_lines(*po.group, inference::input_digests(cases), "reads other input images than", "case",
                                  "every rank must read the same input images");
  if (ro.overlays) inference::create_overlay_folder(output);  // a folder in the way fails before any write
  if (world.rank == 0) {
    fs::create_directories(output);
    write_ordered_json(dataset_copy, dataset_json);
    write_json(plans_copy, plans_json);
  }
  const inference::RunSummary s = inference::predict_cases(predictor, cases, ro);
  if (world.rank != 0) return 0;  // rank 0 wrote the outputs and reports every failure

  std::printf("%d case(s) written, %d skipped, %zu failed in %.1f s (%.1f s in the sliding window) -> %s\n", s.written,
              s.skipped, s.failed.size(), s.seconds, s.predict_seconds, output.c_str());
  if (s.failed.empty()) return 0;
  std::fprintf(stderr, "medseg_predict: %zu case(s) failed:\n", s.failed.size());
  for (const auto& [id, why] : s.failed) std::fprintf(stderr, "  %s: %s\n", id.c_str(), why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Predict segmentations with a trained model (nnU-Net's nnUNetv2_predict)", "medseg_predict"};
  std::vector<std::string> inputs, folds;
  std::string output, dataset, configuration, plans = "nnUNetPlans", trainer = "nnUNetTrainer", model_folder;
  std::string chk = "checkpoint_final", amp = "auto", probabilities_format = "medseg", slabs = "auto";
  inference::PredictorOptions po;
  inference::RunOptions ro;
  bool disable_tta = false, no_progress = false;
  int num_parts = 1, part_id = 0, nproc = 0, dist_timeout = 600;
  po.torch_threads = cli::default_threads();
  app.add_option("-i,--input", inputs, "Input folder(s) of CASE_XXXX files, or image files")->required();
  app.add_option("-o,--output", output, "Output folder")->required();
  app.add_option("-d,--dataset", dataset, "Dataset id or name (with -c; the model is under MEDSEG_RESULTS)");
  app.add_option("-c,--configuration", configuration, "Configuration, e.g. 3d_fullres");
  app.add_option("-p,--plans", plans, "Plans identifier")->capture_default_str();
  app.add_option("--tr", trainer, "Trainer class name")->capture_default_str();
  app.add_option("-m,--model", model_folder, "Model folder (instead of -d/-c/-p/-tr)");
  app.add_option("-f,--folds", folds, "Folds to ensemble: 0 1 2 3 4 or all (default: every fold_K present)");
  app.add_option("--chk", chk, "Checkpoint name in each fold folder")->capture_default_str();
  app.add_option("--step_size", po.step_size, "Sliding-window step as a fraction of the patch")->capture_default_str();
  app.add_flag("--disable_tta", disable_tta, "No mirroring test-time augmentation (about 8x faster in 3D)");
  app.add_flag("--save_probabilities", ro.save_probabilities,
               "Also write the probabilities: CASE_probabilities.npy (class, z, y, x) and CASE_probabilities.json");
  app.add_option("--probabilities_format", probabilities_format,
                 "With --save_probabilities: medseg (npy + json), nnunet (nnU-Net's CASE.npz) or both")
      ->capture_default_str();
  app.add_flag("--overlays", ro.overlays,
               "Also write overlays/CASE.png: axial, coronal and sagittal slices with the segmentation drawn over the image");
  app.add_option("--device", po.device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--amp", amp, "Mixed precision: auto (fp16 on CUDA, off on CPU), fp16, bf16, off")->capture_default_str();
  app.add_flag("--not_on_device", po.not_on_device,
               "Accumulate the logits in host memory, not on the GPU (nnU-Net's flag; for large cases)");
  app.add_option("--slabs", slabs,
                 "auto: predict a case in slabs when its whole logits would not fit the memory free; always; never")
      ->capture_default_str();
  app.add_option("--npp", ro.npp, "Preprocessing workers (0: inline)")->capture_default_str();
  app.add_option("--nps", ro.nps, "Export workers (0: inline)")->capture_default_str();
  app.add_option("--tile_batch", po.tile_batch, "Tiles x mirrored copies per forward pass")->capture_default_str();
  app.add_option("--threads", po.torch_threads, "Torch CPU threads (MEDSEG_NUM_THREADS)")->capture_default_str();
  app.add_option("--export_threads", ro.export_threads, "Classes resampled in parallel per export")->capture_default_str();
  app.add_option("--num_parts", num_parts, "Split the sorted case list into this many parts (one per process/GPU)")
      ->capture_default_str();
  app.add_option("--part_id", part_id, "Which part this process predicts: cases i with i % num_parts == part_id")
      ->capture_default_str();
  app.add_option("--nproc_per_node", nproc,
                 "Share every case's tiles among N local ranks (re-executes itself; docs/distributed.md)")
      ->check(CLI::Range(1, 1024));
  auto* o_threads_given = app.get_option("--threads");
  app.add_option("--dist-timeout", dist_timeout, "Seconds a rank waits for the others before it gives up (1..86400)")
      ->check(CLI::Range(1, 86400))->capture_default_str();
  app.add_flag("--continue_prediction", ro.continue_prediction, "Skip cases whose outputs exist");
  app.add_flag("--disable_progress_bar", no_progress, "No progress bar");
  bool no_postprocessing = false;
  app.add_flag("--disable_postprocessing", no_postprocessing,
               "Ignore the model folder's postprocessing.json (medseg_determine_postprocessing -m)");
  std::string prev_stage;
  app.add_option("--prev_stage_predictions", prev_stage,
                 "Cascade stage: folder with the previous stage's predictions of the same cases (CASE<file_ending>)");
  std::string prev_model_opt;
  app.add_option("--prev_stage_model", prev_model_opt,
                 "Cascade stage: the previous stage's model folder (default: its sibling in MEDSEG_RESULTS); it "
                 "predicts first, into OUTPUT/<its configuration>/");
  return cli::run(argc, argv, app, [&] {
    if (model_folder.empty()) {
      if (dataset.empty() || configuration.empty()) throw Error("pass -d DATASET -c CONFIGURATION, or -m MODEL_FOLDER");
      model_folder = inference::model_folder_path(root_folder(Root::Results), dataset, trainer, plans, configuration);
    }
    if (ro.npp < 0 || ro.nps < 0) throw Error("-npp and -nps must be >= 0");
    inference::parse_probabilities_format(probabilities_format, &ro.probabilities_npy, &ro.probabilities_npz);
    inference::check_step_size(po.step_size, "-step_size");  // once, not once per case
    inference::check_part(num_parts, part_id);
    if (nproc > 1 && std::getenv("RANK") == nullptr) {
      distributed::LaunchOptions lo;
      lo.nproc = nproc;
      lo.grace = std::chrono::seconds(dist_timeout);
      lo.program_name = "medseg_predict";
      return distributed::launch_local_ranks(std::vector<std::string>(argv, argv + argc), lo);
    }
    const distributed::World world = distributed::world_from_environment();
    if (world.distributed()) join_ranks(world, dist_timeout, o_threads_given->count() > 0, po, no_progress);
    po.mirroring = !disable_tta;
    po.amp = parse_amp(amp, "--amp");
    po.slabs = inference::parse_slab_mode(slabs);
    po.progress = false;
    ro.progress = !no_progress;
    set_progress_bars_enabled(!no_progress);

    inference::ModelFolder model = inference::load_model_folder(model_folder, folds, chk);
    if (!configuration.empty() && configuration != model.configuration)
      throw Error(model_folder + " holds configuration '" + model.configuration + "', not '" + configuration + "'");
    const std::string previous = model.plans.configuration(model.configuration).previous_stage;
    if (previous.empty() && (!prev_stage.empty() || !prev_model_opt.empty()))
      throw Error(model_folder + " holds configuration '" + model.configuration +
                  "', which is not a cascade stage: -prev_stage_predictions and --prev_stage_model do not apply");
    if (!previous.empty() && prev_stage.empty()) {
      // Chaining: the previous stage's model predicts first, into OUTPUT/<its configuration>/.
      const std::string prev_model = prev_model_opt.empty() ? sibling_model_folder(model_folder, previous) : prev_model_opt;
      if (prev_model.empty() || !fs::is_directory(prev_model))
        throw Error("configuration '" + model.configuration + "' is a cascade stage: it needs the '" + previous +
                    "' predictions (-prev_stage_predictions FOLDER) or that model (--prev_stage_model FOLDER); " +
                    (prev_model.empty() ? "no sibling model folder of " + model_folder : prev_model + " not found"));
      inference::ModelFolder first = inference::load_model_folder(prev_model, folds, chk);
      if (first.configuration != previous)
        throw Error(prev_model + " holds configuration '" + first.configuration + "', the cascade needs '" + previous + "'");
      prev_stage = (fs::path(output) / previous).string();
      spdlog::info("cascade: predicting '{}' with {} first, into {}", previous, prev_model, prev_stage);
      // Without postprocessing: the cascade was trained on the first stage's raw predictions. A case
      // the first stage fails on fails again below, naming its missing input; the rest go on.
      const int first_rc = predict_folder(std::move(first), prev_model, inputs, prev_stage, "", /*no_postprocessing=*/true,
                                          num_parts, part_id, world, po, ro);
      if (world.distributed()) po.group->barrier();
      const int rc = predict_folder(std::move(model), model_folder, inputs, output, prev_stage, no_postprocessing,
                                    num_parts, part_id, world, po, ro);
      return std::max(first_rc, rc);
    }
    return predict_folder(std::move(model), model_folder, inputs, output, prev_stage, no_postprocessing, num_parts,
                          part_id, world, po, ro);
  });
}
