// medseg-app: itk
// medseg_predict: segment images with a trained model folder (nnUNetv2_predict's flags).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/progress.h"
#include "core_torch/torch_memory.h"
#include "distributed/join.h"
#include "distributed/process_group.h"
#include "distributed/world.h"
#include "inference/case_inputs.h"
#include "inference/export.h"
#include "inference/model_folder.h"
#include "inference/predict_folder.h"
#include "inference/predictor.h"
#include "sharing/manifest.h"

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

// The command line, as given.
struct PredictArgs {
  std::vector<std::string> inputs, folds;
  std::string output, dataset, configuration, plans = "nnUNetPlans", trainer = "nnUNetTrainer", model_folder;
  std::string chk = "checkpoint_final", amp = "auto", probabilities_format = "medseg", slabs = "auto";
  std::string accumulators = "fp16";
  std::vector<std::string> series_uids;
  std::string prev_stage, prev_model_opt;
  inference::PredictorOptions po;
  inference::RunOptions ro;
  bool disable_tta = false, no_progress = false, no_postprocessing = false;
  int num_parts = 1, part_id = 0, nproc = 0, dist_timeout = 600;
};

void declare(CLI::App& app, PredictArgs& a) {
  a.po.torch_threads = cli::default_threads();
  app.add_option("-i,--input", a.inputs, "Input folder(s) of CASE_XXXX files, or image files")->required();
  app.add_option("-o,--output", a.output, "Output folder")->required();
  app.add_option("-d,--dataset", a.dataset, "Dataset id or name (with -c; the model is under MEDSEG_RESULTS)");
  app.add_option("-c,--configuration", a.configuration, "Configuration, e.g. 3d_fullres");
  app.add_option("-p,--plans", a.plans, "Plans identifier")->capture_default_str();
  app.add_option("--tr", a.trainer, "Trainer class name")->capture_default_str();
  app.add_option("-m,--model", a.model_folder, "Model folder (instead of -d/-c/-p/-tr)");
  app.add_option("-f,--folds", a.folds, "Folds to ensemble: 0 1 2 3 4 or all (default: every fold_K present)");
  app.add_option("--chk", a.chk, "Checkpoint name in each fold folder")->capture_default_str();
  app.add_option("--step_size", a.po.step_size, "Sliding-window step as a fraction of the patch")
      ->capture_default_str();
  app.add_flag("--disable_tta", a.disable_tta, "No mirroring test-time augmentation (about 8x faster in 3D)");
  app.add_flag("--save_probabilities", a.ro.save_probabilities,
               "Also write the probabilities: CASE_probabilities.npy (class, z, y, x) and CASE_probabilities.json");
  app.add_option("--probabilities_format", a.probabilities_format,
                 "With --save_probabilities: medseg (npy + json), nnunet (nnU-Net's CASE.npz) or both")
      ->capture_default_str();
  app.add_option("--output_format", a.ro.output_format,
                 "auto (a DICOM series' case as CASE.dcm, a DICOM SEG; others in file_ending), nifti (file_ending for "
                 "every case), dicom_seg, or rtstruct (CASE_rtstruct.dcm, an RT Structure Set; docs/dicom.md)")
      ->capture_default_str();
  app.add_option("--series_uid", a.series_uids,
                 "Of a DICOM case folder holding several series, the Series Instance UID to read: UID for every case, "
                 "CASE=UID for one (repeat; docs/dicom.md)");
  app.add_flag(
      "--overlays", a.ro.overlays,
      "Also write overlays/CASE.png: axial, coronal and sagittal slices with the segmentation drawn over the image");
  app.add_option("--device", a.po.device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--amp", a.amp,
                 "The network's precision: auto (fp16 on CUDA, bf16 on a CPU with bf16 units, else fp32; fp32 with "
                 "--exact_nnunet), fp16, bf16, off (fp32, nnU-Net's arithmetic)")
      ->capture_default_str();
  app.add_option("--accumulators", a.accumulators,
                 "fp16: nnU-Net's fp16 sums of the tiles' logits (its probabilities; the default); fp32: exact sums")
      ->check(CLI::IsMember({"fp16", "fp32"}))
      ->capture_default_str();
  app.add_flag("--exact_nnunet", a.po.exact_nnunet,
               "nnU-Net's probabilities bit for bit: fp16 sums, batch-1 tiles, torch's own convolutions (slower)");
  app.add_flag("--not_on_device", a.po.not_on_device,
               "Accumulate the logits in host memory, not on the GPU (nnU-Net's flag; for large cases)");
  app.add_option("--slabs", a.slabs,
                 "auto: predict a case in slabs when its whole logits would not fit the memory free; always; never")
      ->capture_default_str();
  app.add_option("--npp", a.ro.npp, "Preprocessing workers (0: inline)")->capture_default_str();
  app.add_option("--nps", a.ro.nps, "Export workers (0: inline)")->capture_default_str();
  app.add_option("--tile_batch", a.po.tile_batch,
                 "Tiles x mirrored copies per forward pass; 0: 8 on CUDA, on the CPU as many as keep a pass "
                 "within 2^20 voxels (1 to 8)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--threads", a.po.torch_threads, "Torch CPU threads (MEDSEG_NUM_THREADS)")->capture_default_str();
  app.add_option("--export_threads", a.ro.export_threads, "Classes resampled in parallel per export")
      ->capture_default_str();
  app.add_option("--num_parts", a.num_parts, "Split the sorted case list into this many parts (one per process/GPU)")
      ->capture_default_str();
  app.add_option("--part_id", a.part_id, "Which part this process predicts: cases i with i % num_parts == part_id")
      ->capture_default_str();
  app.add_option("--nproc_per_node", a.nproc,
                 "Share every case's tiles among N local ranks (re-executes itself; docs/distributed.md)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--dist-timeout", a.dist_timeout, "Seconds a rank waits for the others before it gives up (1..86400)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("--continue_prediction", a.ro.continue_prediction, "Skip cases whose outputs exist");
  app.add_flag("--disable_progress_bar", a.no_progress, "No progress bar");
  app.add_flag("--disable_postprocessing", a.no_postprocessing,
               "Ignore the model folder's postprocessing.json (medseg_determine_postprocessing -m)");
  app.add_option("--prev_stage_predictions", a.prev_stage,
                 "Cascade stage: folder with the previous stage's predictions of the same cases (CASE<file_ending>)");
  app.add_option("--prev_stage_model", a.prev_model_opt,
                 "Cascade stage: the previous stage's model folder (default: its sibling in MEDSEG_RESULTS); it "
                 "predicts first, into OUTPUT/<its configuration>/");
}

// The model folder from -m or -d/-c/-p/--tr, and the flags checked once before anything starts.
void check_arguments(PredictArgs& a) {
  if (a.model_folder.empty()) {
    if (a.dataset.empty() || a.configuration.empty())
      throw Error("pass -d DATASET -c CONFIGURATION, or -m MODEL_FOLDER");
    a.model_folder =
        inference::model_folder_path(root_folder(Root::Results), a.dataset, a.trainer, a.plans, a.configuration);
  }
  if (a.ro.npp < 0 || a.ro.nps < 0) throw Error("-npp and -nps must be >= 0");
  // Each is a thread; thousands exhaust the process's limits (issue 42: -npp 3000 aborted).
  for (const auto& [flag, n] : {std::pair{"-npp", a.ro.npp}, {"-nps", a.ro.nps}, {"-threads", a.po.torch_threads}})
    MEDSEG_CHECK(n <= max_worker_threads(), flag, " ", n, ": more than this machine's bound of ", max_worker_threads(),
                 " (4 per core)");
  inference::parse_probabilities_format(a.probabilities_format, &a.ro.probabilities_npy, &a.ro.probabilities_npz);
  inference::parse_series_uids(a.series_uids, a.ro);
  inference::check_step_size(a.po.step_size, "-step_size");  // once, not once per case
  inference::check_part(a.num_parts, a.part_id);
}

// A rank started by a launcher joins the others: every case's tiles are shared between the ranks; rank 0 writes.
void join_if_rank(PredictArgs& a, const distributed::World& world, bool threads_given) {
  if (!world.distributed()) return;
  distributed::RankSettings rs;
  rs.device = a.po.device;
  rs.threads = threads_given ? a.po.torch_threads : 0;
  rs.host_threads = cli::default_threads();
  rs.timeout_s = a.dist_timeout;
  rs.program = "medseg_predict";
  auto joined = distributed::join_ranks(world, rs);
  a.po.device = joined.device;
  a.po.torch_threads = joined.threads;
  a.no_progress = a.no_progress || joined.quiet;
  a.po.group = std::move(joined.group);
}

// Chaining a cascade: the previous stage's model predicts first, into OUTPUT/<its configuration>/, then `model`
// from those predictions. The exit status.
int predict_cascade(PredictArgs& a, inference::ModelFolder model, inference::FolderRun run, const std::string& previous,
                    const distributed::World& world) {
  const std::string prev_model =
      a.prev_model_opt.empty() ? inference::sibling_model_folder(a.model_folder, previous) : a.prev_model_opt;
  if (prev_model.empty() || !fs::is_directory(prev_model))
    throw Error("configuration '" + model.configuration + "' is a cascade stage: it needs the '" + previous +
                "' predictions (-prev_stage_predictions FOLDER) or that model (--prev_stage_model FOLDER); " +
                (prev_model.empty() ? "no sibling model folder of " + a.model_folder : prev_model + " not found"));
  inference::ModelFolder first = inference::load_model_folder(prev_model, a.folds, a.chk);
  if (first.configuration != previous)
    throw Error(prev_model + " holds configuration '" + first.configuration + "', the cascade needs '" + previous +
                "'");
  inference::FolderRun run_first{a.inputs, (fs::path(a.output) / previous).string(), "", false, a.num_parts, a.part_id};
  spdlog::info("cascade: predicting '{}' with {} first, into {}", previous, prev_model, run_first.output);
  // Without postprocessing: the cascade was trained on the first stage's raw predictions. A case
  // the first stage fails on fails again below, naming its missing input; the rest go on.
  const int first_rc =
      report(inference::predict_folder(std::move(first), prev_model, run_first, world, a.po, a.ro), run_first.output);
  if (world.distributed()) a.po.group->barrier();
  run.prev_stage = run_first.output;
  const int rc = report(inference::predict_folder(std::move(model), a.model_folder, run, world, a.po, a.ro), a.output);
  return std::max(first_rc, rc);
}

// One process's (or one rank's) predictions; the exit status.
int predict(PredictArgs& a, const distributed::World& world) {
  a.po.mirroring = !a.disable_tta;
  a.po.amp = parse_amp(a.amp, "--amp");
  a.po.half_accumulators = a.accumulators == "fp16";
  a.po.slabs = inference::parse_slab_mode(a.slabs);
  a.po.progress = false;
  a.ro.progress = !a.no_progress;
  a.ro.dicom_seg.version = sharing::medseg_version();  // a DICOM SEG names the software that made it
  set_progress_bars_enabled(!a.no_progress);

  inference::ModelFolder model = inference::load_model_folder(a.model_folder, a.folds, a.chk);
  if (!a.configuration.empty() && a.configuration != model.configuration)
    throw Error(a.model_folder + " holds configuration '" + model.configuration + "', not '" + a.configuration + "'");
  const std::string previous = model.plans.configuration(model.configuration).previous_stage;
  if (previous.empty() && (!a.prev_stage.empty() || !a.prev_model_opt.empty()))
    throw Error(a.model_folder + " holds configuration '" + model.configuration +
                "', which is not a cascade stage: -prev_stage_predictions and --prev_stage_model do not apply");
  inference::FolderRun run{a.inputs, a.output, a.prev_stage, !a.no_postprocessing, a.num_parts, a.part_id};
  if (!previous.empty() && a.prev_stage.empty()) return predict_cascade(a, std::move(model), run, previous, world);
  return report(inference::predict_folder(std::move(model), a.model_folder, run, world, a.po, a.ro), a.output);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Predict segmentations with a trained model (nnU-Net's nnUNetv2_predict)", "medseg_predict"};
  PredictArgs a;
  declare(app, a);
  return cli::run(argc, argv, app, [&] {
    check_arguments(a);
    if (distributed::is_launcher(a.nproc))
      return distributed::launch_ranks(a.nproc, std::vector<std::string>(argv, argv + argc), "medseg_predict",
                                       a.dist_timeout);
    const distributed::World world = distributed::world_from_environment();
    join_if_rank(a, world, app.get_option("--threads")->count() > 0);
    enable_cpu_block_cache();  // activations reused tile to tile, not faulted in afresh (docs/predict.md)
    return predict(a, world);
  });
}
