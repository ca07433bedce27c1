// medseg-app: itk
// medseg_predict: segment images with a trained model folder (nnUNetv2_predict's flags).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/progress.h"
#include "distributed/join.h"
#include "distributed/process_group.h"
#include "distributed/world.h"
#include "inference/case_inputs.h"
#include "inference/export.h"
#include "inference/model_folder.h"
#include "inference/predict_folder.h"
#include "inference/predictor.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// Prints rank 0's summary of one model's run; the exit status.
int report(const std::optional<inference::RunSummary>& summary, const std::string& output) {
  if (!summary) return 0;  // not rank 0: rank 0 reports every failure
  const inference::RunSummary& s = *summary;
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
  app.add_flag(
      "--overlays", ro.overlays,
      "Also write overlays/CASE.png: axial, coronal and sagittal slices with the segmentation drawn over the image");
  app.add_option("--device", po.device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--amp", amp, "Mixed precision: auto (fp16 on CUDA, off on CPU), fp16, bf16, off")
      ->capture_default_str();
  app.add_flag("--not_on_device", po.not_on_device,
               "Accumulate the logits in host memory, not on the GPU (nnU-Net's flag; for large cases)");
  app.add_option("--slabs", slabs,
                 "auto: predict a case in slabs when its whole logits would not fit the memory free; always; never")
      ->capture_default_str();
  app.add_option("--npp", ro.npp, "Preprocessing workers (0: inline)")->capture_default_str();
  app.add_option("--nps", ro.nps, "Export workers (0: inline)")->capture_default_str();
  app.add_option("--tile_batch", po.tile_batch, "Tiles x mirrored copies per forward pass")->capture_default_str();
  app.add_option("--threads", po.torch_threads, "Torch CPU threads (MEDSEG_NUM_THREADS)")->capture_default_str();
  app.add_option("--export_threads", ro.export_threads, "Classes resampled in parallel per export")
      ->capture_default_str();
  app.add_option("--num_parts", num_parts, "Split the sorted case list into this many parts (one per process/GPU)")
      ->capture_default_str();
  app.add_option("--part_id", part_id, "Which part this process predicts: cases i with i % num_parts == part_id")
      ->capture_default_str();
  app.add_option("--nproc_per_node", nproc,
                 "Share every case's tiles among N local ranks (re-executes itself; docs/distributed.md)")
      ->check(CLI::Range(1, 1024));
  auto* o_threads_given = app.get_option("--threads");
  app.add_option("--dist-timeout", dist_timeout, "Seconds a rank waits for the others before it gives up (1..86400)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
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
    if (distributed::is_launcher(nproc))
      return distributed::launch_ranks(nproc, std::vector<std::string>(argv, argv + argc), "medseg_predict",
                                       dist_timeout);
    const distributed::World world = distributed::world_from_environment();
    if (world.distributed()) {  // every case's tiles shared between the ranks; rank 0 writes
      distributed::RankSettings rs;
      rs.device = po.device;
      rs.threads = o_threads_given->count() ? po.torch_threads : 0;
      rs.host_threads = cli::default_threads();
      rs.timeout_s = dist_timeout;
      rs.program = "medseg_predict";
      auto joined = distributed::join_ranks(world, rs);
      po.device = joined.device;
      po.torch_threads = joined.threads;
      no_progress = no_progress || joined.quiet;
      po.group = std::move(joined.group);
    }
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
    inference::FolderRun run{inputs, output, prev_stage, !no_postprocessing, num_parts, part_id};
    if (!previous.empty() && prev_stage.empty()) {
      // Chaining: the previous stage's model predicts first, into OUTPUT/<its configuration>/.
      const std::string prev_model =
          prev_model_opt.empty() ? inference::sibling_model_folder(model_folder, previous) : prev_model_opt;
      if (prev_model.empty() || !fs::is_directory(prev_model))
        throw Error("configuration '" + model.configuration + "' is a cascade stage: it needs the '" + previous +
                    "' predictions (-prev_stage_predictions FOLDER) or that model (--prev_stage_model FOLDER); " +
                    (prev_model.empty() ? "no sibling model folder of " + model_folder : prev_model + " not found"));
      inference::ModelFolder first = inference::load_model_folder(prev_model, folds, chk);
      if (first.configuration != previous)
        throw Error(prev_model + " holds configuration '" + first.configuration + "', the cascade needs '" + previous +
                    "'");
      inference::FolderRun run_first{inputs, (fs::path(output) / previous).string(), "", false, num_parts, part_id};
      spdlog::info("cascade: predicting '{}' with {} first, into {}", previous, prev_model, run_first.output);
      // Without postprocessing: the cascade was trained on the first stage's raw predictions. A case
      // the first stage fails on fails again below, naming its missing input; the rest go on.
      const int first_rc =
          report(inference::predict_folder(std::move(first), prev_model, run_first, world, po, ro), run_first.output);
      if (world.distributed()) po.group->barrier();
      run.prev_stage = run_first.output;
      const int rc = report(inference::predict_folder(std::move(model), model_folder, run, world, po, ro), output);
      return std::max(first_rc, rc);
    }
    return report(inference::predict_folder(std::move(model), model_folder, run, world, po, ro), output);
  });
}
