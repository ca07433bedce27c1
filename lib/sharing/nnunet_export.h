#pragma once
// A medseg model folder as nnU-Net v2's results folder, so that nnUNetv2_predict / nnUNetPredictor load and
// run a model trained by medseg (docs/model_sharing.md, "To nnU-Net"):
//   OUT/plans.json, OUT/dataset.json (and dataset_fingerprint.json when present): the model folder's own;
//   OUT/fold_K/checkpoint_final.pth: a torch pickle (torch.load reads it; no code, only a dict) with the
//   keys nnU-Net's predictor reads: network_weights (nnU-Net's state dict, its aliases included),
//   trainer_name, init_args.configuration, inference_allowed_mirroring_axes; and current_epoch.
// Only the networks nnU-Net builds from the plans (PlainConvUNet, ResidualEncoderUNet) can go.
#include <string>
#include <vector>

namespace medseg::sharing {

struct NnunetExportOptions {
  std::string model_folder;        // a medseg model folder
  std::string output;              // the nnU-Net model folder to write (must not exist, or be empty)
  std::vector<std::string> folds;  // {} = every fold_K present
  std::string checkpoint = "checkpoint_final";
  std::string trainer_name;  // nnU-Net trainer class; "" = the model's own when nnU-Net has it, else nnUNetTrainer
  bool overwrite = false;    // replace an existing non-empty output folder
};

struct NnunetExportResult {
  std::vector<std::string> folds;
  std::string trainer_name;
  int64_t tensors = 0;  // network tensors, each once
  int64_t aliases = 0;  // names added for nnU-Net's aliases (decoder.encoder.*, .all_modules.<i>)
};

NnunetExportResult export_nnunet(const NnunetExportOptions& o);

// The names under which nnU-Net's network registers the tensor medseg calls `name`: the name itself, the
// decoder's view of the encoder (decoder.encoder.*), and ConvDropoutNormReLU's all_modules.<i> view of its
// conv (0) and norm (1, or 2 when the block has dropout). Medseg's names are nnU-Net's with these left out.
std::vector<std::string> nnunet_state_dict_names(const std::string& name, bool dropout);

}  // namespace medseg::sharing
