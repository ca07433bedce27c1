#include "training/final_validation.h"

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/strings.h"
#include "data/previous_stage_source.h"
#include "core/progress.h"
#include "evaluation/evaluate_folder.h"
#include "inference/export.h"
#include "inference/overlays.h"
#include "inference/sliding_window.h"
#include "io/dataset.h"
#include "preprocessing/case_store.h"
#include "preprocessing/one_hot.h"
#include "training/data_parallel.h"

namespace fs = std::filesystem;

namespace medseg::training {

namespace {

// The whole preprocessed case as the network takes it: the image channels, then, for a cascade
// stage, the previous stage's one-hot channels (data/augment/cascade.h).
at::Tensor network_input(const preprocessing::PreprocessedCase& c, const RunInputs& in) {
  const auto shape = c.shape();
  const int64_t C = c.num_channels(), K = static_cast<int64_t>(in.previous_stage_labels.size());
  at::Tensor image = at::empty({C + K, shape[0], shape[1], shape[2]}, at::kFloat);
  preprocessing::read_patch(c, {{0, 0, 0}, shape}, image.data_ptr<float>(), 0.0f);
  if (K == 0) return image;
  const auto prev = data::open_previous_stage(in.previous_stage_folder, c.id(), shape, previous_stage_hint(in));
  std::vector<int16_t> seg(static_cast<size_t>(c.voxels()));
  preprocessing::read_seg_patch(prev, {{0, 0, 0}, shape}, seg.data(), -1);
  preprocessing::one_hot(seg.data(), c.voxels(), in.previous_stage_labels, image.data_ptr<float>() + C * c.voxels());
  return image;
}

using NextStage = RunInputs::NextStage;

// The next stages whose preprocessed data exist; nnU-Net skips the others with a warning too.
std::vector<NextStage> next_stages(const RunInputs& in) {
  std::vector<NextStage> out;
  for (const auto& n : in.next_stages) {
    if (!fs::is_directory(n.data_folder)) {
      spdlog::warn(
          "next stage '{}': {} not found, so its inputs are not written (medseg_preprocess -c {}, then "
          "--val)",
          n.configuration, n.data_folder, n.configuration);
      continue;
    }
    fs::create_directories(n.output_folder);
    out.push_back(n);
  }
  return out;
}

// nnU-Net's resample_and_save: this case's prediction on the next stage's preprocessed grid.
void write_next_stage_input(const at::Tensor& logits, const preprocessing::PreprocessedCase& c, const NextStage& n,
                            const inference::LabelMapping& labels, const inference::ExportOptions& opts) {
  preprocessing::PreprocessedCase target;
  try {
    target = preprocessing::open_preprocessed_case(n.data_folder, c.id());
  } catch (const FileError& e) {
    spdlog::warn("next stage '{}': case {} skipped: {}", n.configuration, c.id(), one_line(e.what()));
    return;
  }
  const std::vector<int16_t> seg = inference::logits_to_next_stage(
      logits, c.properties(), target.shape(), target.properties().spacing_after_resampling, labels, opts);
  preprocessing::write_segmentation_file(data::previous_stage_file(n.output_folder, c.id()), target.shape(), seg);
}

}  // namespace

// nnU-Net's perform_actual_validation: predict each preprocessed validation case, export it to the
// original grid exactly as medseg_predict does, then score the exported files against the raw labels
// copied to gt_segmentations/ during preprocessing.
double run_final_validation(models::SegmentationNetworkImpl& net, const RunInputs& in, const torch::Device& device,
                            const std::vector<int64_t>& mirror_axes, bool save_probabilities, const DataParallel* dp) {
  if (in.val_ids.empty()) return std::nan("");
  const std::vector<std::string> mine = dp ? dp->my_cases(in.val_ids) : in.val_ids;
  const bool writer = !dp || dp->writer();
  const auto& plan = in.plans.configuration(in.configuration);
  const io::DatasetInfo ds = io::dataset_info_from_json(in.dataset_json, in.folders.dataset_json_file);
  const inference::LabelMapping labels = inference::label_mapping(ds, in.folders.dataset_json_file);
  inference::ExportOptions export_opts;
  export_opts.resample = inference::probabilities_resampling(plan);
  export_opts.save_probabilities = save_probabilities;
  const std::string out_dir = (fs::path(in.folders.fold_folder) / "validation").string();
  fs::create_directories(out_dir);
  const fs::path gt_dir = fs::path(in.folders.preprocessed_dataset) / "gt_segmentations";

  const bool ds_on = net.deep_supervision();
  net.set_deep_supervision(false);
  net.eval();
  torch::NoGradGuard no_grad;
  inference::SlidingWindowOptions o;
  o.patch_size.assign(plan.patch_size.begin(), plan.patch_size.end());
  o.mirror_axes = mirror_axes;
  o.device = device;
  export_opts.half_logits = o.half_accumulators;  // nnU-Net's fp16 logits, as medseg_predict's default
  auto fn = [&](const at::Tensor& x) { return net.forward(x)[0]; };

  const std::vector<NextStage> next = next_stages(in);
  ProgressBar bar("final validation", static_cast<int64_t>(mine.size()), writer);
  for (const auto& id : mine) {
    const auto c = preprocessing::open_preprocessed_case(in.folders.data_folder, id);
    const at::Tensor logits = inference::predict_sliding_window(fn, network_input(c, in), in.num_classes, o);
    const Volume seg = inference::export_prediction(logits, c.properties(), labels, export_opts,
                                                    (fs::path(out_dir) / id).string(), ds.file_ending);
    inference::write_validation_overlay(c, seg, (gt_dir / (id + ds.file_ending)).string(), ds, export_opts, out_dir);
    for (const auto& n : next) write_next_stage_input(logits, c, n, labels, export_opts);
    bar.tick();
  }
  bar.finish();
  net.set_deep_supervision(ds_on);
  // Every rank's cases are on disk before rank 0 scores the folder. Ranks finish up to one case
  // apart, and one case may take longer than the run's timeout: wait up to a day here.
  if (dp) dp->barrier(std::chrono::hours(24));
  if (!writer) return std::nan("");

  evaluation::EvaluateOptions eo;
  evaluation::labels_from_dataset_json(in.dataset_json, eo);
  eo.chill = true;  // the reference folder holds every case, the validation folder only this fold's
  json summary = evaluation::evaluate_folder((fs::path(in.folders.preprocessed_dataset) / "gt_segmentations").string(),
                                             out_dir, eo);
  summary["medseg"] = {{"configuration", in.configuration}, {"fold", in.fold}};
  const std::string out = (fs::path(out_dir) / "summary.json").string();
  write_json(out, summary);
  const auto& d = summary["foreground_mean"]["Dice"];
  const double dice = d.is_null() ? std::nan("") : d.get<double>();
  spdlog::info("final validation on {} case(s): mean foreground Dice {:.4f} -> {}", in.val_ids.size(), dice, out);
  return dice;
}

}  // namespace medseg::training
