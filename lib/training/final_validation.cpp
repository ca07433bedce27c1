#include "training/final_validation.h"

#include <filesystem>

#include "core/log.h"
#include "core/progress.h"
#include "evaluation/evaluate_folder.h"
#include "inference/export.h"
#include "inference/overlays.h"
#include "inference/sliding_window.h"
#include "io/dataset.h"
#include "preprocessing/case_store.h"
#include "training/data_parallel.h"

namespace fs = std::filesystem;

namespace medseg::training {

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
  auto fn = [&](const at::Tensor& x) { return net.forward(x)[0]; };

  ProgressBar bar("final validation", static_cast<int64_t>(mine.size()), writer);
  for (const auto& id : mine) {
    const auto c = preprocessing::open_preprocessed_case(in.folders.data_folder, id);
    const auto shape = c.shape();
    at::Tensor image = at::empty({c.num_channels(), shape[0], shape[1], shape[2]}, at::kFloat);
    preprocessing::read_patch(c, {{0, 0, 0}, shape}, image.data_ptr<float>(), 0.0f);
    const at::Tensor logits = inference::predict_sliding_window(fn, image, in.num_classes, o);
    const Volume seg = inference::export_prediction(logits, c.properties(), labels, export_opts,
                                                    (fs::path(out_dir) / id).string(), ds.file_ending);
    inference::write_validation_overlay(c, seg, (gt_dir / (id + ds.file_ending)).string(), ds, export_opts, out_dir);
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
