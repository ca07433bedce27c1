#pragma once
// Hand-built model folders for the prediction tests: a tiny plans.json (one configuration), a
// dataset.json, and fold_K/checkpoint_final.ckpt files holding a freshly built network's weights,
// in the layout the trainer writes (docs/predict.md).
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/json_io.h"
#include "core/volume.h"
#include "models/network.h"
#include "nn/models_test_util.h"

namespace medseg::test {

// A smooth image with structure everywhere, so that the tiles' logits all differ (sharded prediction:
// every rank's share of the tiles matters).
inline Volume wavy_image(const std::array<int64_t, 3>& shape, int salt) {
  Geometry g;
  g.spacing = {1.0, 1.0, 1.0};
  Volume v(PixelType::Float32, shape, g);
  float* p = v.data<float>();
  for (int64_t z = 0; z < shape[0]; ++z)
    for (int64_t y = 0; y < shape[1]; ++y)
      for (int64_t x = 0; x < shape[2]; ++x)
        p[(z * shape[1] + y) * shape[2] + x] =
            static_cast<float>(std::sin(0.3 * z + salt) + std::cos(0.45 * y) * std::sin(0.2 * x + 0.1 * z));
  return v;
}

struct TinyModelSpec {
  std::string configuration = "3d_fullres";
  int channels = 1;
  std::vector<std::string> labels{"background", "fg"};  // plain labels 0..K-1
  std::vector<int> patch{16, 16, 16};
  std::vector<double> spacing{1.0, 1.0, 1.0};
  std::vector<int> transpose_forward{0, 1, 2};
  std::string normalization = "ZScoreNormalization";
  nlohmann::json regions;  // null, or {"labels": {...}, "regions_class_order": [...]}
};

inline nlohmann::json tiny_dataset_json(const TinyModelSpec& s) {
  nlohmann::json ch = nlohmann::json::object();
  for (int c = 0; c < s.channels; ++c) ch[std::to_string(c)] = "ch" + std::to_string(c);
  nlohmann::json labels = nlohmann::json::object();
  if (s.regions.is_null()) {
    for (std::size_t k = 0; k < s.labels.size(); ++k) labels[s.labels[k]] = static_cast<int>(k);
  } else {
    labels = s.regions.at("labels");
  }
  nlohmann::json d = {{"channel_names", ch}, {"labels", labels}, {"numTraining", 2}, {"file_ending", ".nii.gz"}};
  if (!s.regions.is_null()) d["regions_class_order"] = s.regions.at("regions_class_order");
  return d;
}

// A 2-stage plain U-Net (4, 8 features, 3^dims kernels): tiny enough to train or run in a test.
inline nlohmann::json tiny_architecture(int dims) {
  const auto n = static_cast<std::size_t>(dims);
  const std::vector<int64_t> k(n, 3), s1(n, 1), s2(n, 2);
  return unet_arch("PlainConvUNet", dims, {4, 8}, {k, k}, {s1, s2}, {1, 1}, {1});
}

inline nlohmann::json tiny_plans_json(const TinyModelSpec& s) {
  const nlohmann::json resampling = {{"is_seg", false}, {"order", 1}, {"order_z", 0}, {"force_separate_z", nullptr}};
  nlohmann::json seg_kw = resampling;
  seg_kw["is_seg"] = true;
  std::vector<std::string> norms(static_cast<std::size_t>(s.channels), s.normalization);
  std::vector<bool> masks(static_cast<std::size_t>(s.channels), false);
  nlohmann::json cfg = {{"data_identifier", "nnUNetPlans_" + s.configuration},
                        {"preprocessor_name", "DefaultPreprocessor"},
                        {"batch_size", 2},
                        {"patch_size", s.patch},
                        {"median_image_size_in_voxels", s.patch},
                        {"spacing", s.spacing},
                        {"normalization_schemes", norms},
                        {"use_mask_for_norm", masks},
                        {"resampling_fn_data", "resample_data_or_seg_to_shape"},
                        {"resampling_fn_seg", "resample_data_or_seg_to_shape"},
                        {"resampling_fn_data_kwargs", resampling},
                        {"resampling_fn_seg_kwargs", seg_kw},
                        {"resampling_fn_probabilities", "resample_data_or_seg_to_shape"},
                        {"resampling_fn_probabilities_kwargs", resampling},
                        {"architecture", tiny_architecture(static_cast<int>(s.patch.size()))},
                        {"batch_dice", false}};
  std::vector<int> back(3);
  for (int i = 0; i < 3; ++i) back[static_cast<std::size_t>(s.transpose_forward[static_cast<std::size_t>(i)])] = i;
  return {{"dataset_name", "Dataset999_Tiny"},
          {"plans_name", "nnUNetPlans"},
          {"original_median_spacing_after_transp", {1.0, 1.0, 1.0}},
          {"original_median_shape_after_transp", {20, 20, 20}},
          {"image_reader_writer", "SimpleITKIO"},
          {"transpose_forward", s.transpose_forward},
          {"transpose_backward", back},
          {"configurations", {{s.configuration, cfg}}},
          {"experiment_planner_used", "ExperimentPlanner"},
          {"label_manager", "LabelManager"},
          {"foreground_intensity_properties_per_channel", nlohmann::json::object()}};
}

inline int64_t tiny_outputs(const TinyModelSpec& s) {
  return s.regions.is_null() ? static_cast<int64_t>(s.labels.size())
                             : static_cast<int64_t>(s.regions.at("regions_class_order").size());
}

// A network with the spec's architecture; `seed` fixes its random weights.
inline models::SegmentationNetwork tiny_network(const TinyModelSpec& s, uint64_t seed) {
  torch::manual_seed(seed);
  models::NetworkBuildOptions bo;
  bo.init_weights = false;  // LibTorch's default init is random enough
  auto net =
      models::build_network(tiny_architecture(static_cast<int>(s.patch.size())), s.channels, tiny_outputs(s), bo);
  net->set_deep_supervision(false);
  net->eval();
  return net;
}

// Makes every output constant: seg-layer weights 0, biases `bias` (one per output).
inline void make_constant(models::SegmentationNetwork& net, const std::vector<float>& bias) {
  torch::NoGradGuard g;
  for (auto& p : net->named_parameters()) {
    if (p.key().find("seg_layers") == std::string::npos) continue;
    if (p.key().find("weight") != std::string::npos) p.value().zero_();
    if (p.key().find("bias") != std::string::npos) p.value().copy_(torch::tensor(bias));
  }
}

// Writes folder/{plans.json,dataset.json,fold_K/checkpoint_final.ckpt} for every fold in `folds`
// (same weights in each). `with_json` = false leaves the JSON only inside the checkpoints.
inline void write_model_folder(const std::string& folder, const TinyModelSpec& s, models::SegmentationNetwork& net,
                               const std::vector<std::string>& folds, bool with_json = true,
                               const std::vector<int64_t>& mirror_axes = {0, 1, 2}) {
  namespace fs = std::filesystem;
  fs::create_directories(folder);
  const auto plans = tiny_plans_json(s);
  const auto ds = tiny_dataset_json(s);
  if (with_json) {
    write_json(folder + "/plans.json", plans);
    write_json(folder + "/dataset.json", ds);
  }
  checkpoint::Checkpoint ck;
  ck.weights = checkpoint::module_weights(*net);
  ck.plans = plans;
  ck.dataset = ds;
  std::vector<int64_t> axes;
  for (auto a : mirror_axes)
    if (a < static_cast<int64_t>(s.patch.size())) axes.push_back(a);
  ck.extra = {{"configuration", s.configuration},
              {"in_channels", s.channels},
              {"num_classes", tiny_outputs(s)},
              {"inference_allowed_mirroring_axes", axes},
              {"trainer_name", "nnUNetTrainer"}};
  for (const auto& f : folds) {
    fs::create_directories(folder + "/fold_" + f);
    checkpoint::save_checkpoint(folder + "/fold_" + f + "/checkpoint_final.ckpt", ck);
  }
}

}  // namespace medseg::test
