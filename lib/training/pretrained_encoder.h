#pragma once
// Fine-tuning from a self-supervised encoder, as nnU-Net's PretrainedTrainer does with nnssl checkpoints
// (training/nnUNetTrainer/pretraining/pretrainedTrainer.py, load_pretrained_weights;
// documentation/finetuning_from_nnssl_checkpoints.md). The pretrained network's stem and encoder go into the
// new network's (models::SegmentationNetworkImpl::encoder_keys); its decoder and segmentation head stay as
// initialised. Two adaptations, as nnU-Net makes them:
//   - a stem pretrained on one input channel takes C channels as its first convolution repeated C times and
//     divided by C (the same response to C copies of one image);
//   - a learnable position embedding pretrained on another patch is resized trilinearly to the new token grid.
// The file is read by sharing/nnssl_checkpoint.h; this stage takes its weights and adaptation plan.
#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/network.h"
#include "training/trainer_config.h"

namespace medseg::training {

struct PretrainedEncoder {
  std::vector<std::pair<std::string, at::Tensor>> weights;  // the pretraining network's, in medseg's names
  // Where the pretraining network keeps them (nnssl's key_to_encoder, key_to_stem, keys_to_in_proj, key_to_lpe).
  std::string key_to_encoder, key_to_stem, key_to_lpe;
  std::vector<std::string> keys_to_in_proj;
  int64_t in_channels = 1;                      // pretrain_num_input_channels
  std::vector<int64_t> patch_size;              // the pretraining patch (pretrain_patch_size, else the pretrain plan's)
  std::vector<int64_t> recommended_patch_size;  // recommended_downstream_patchsize
  std::string architecture;                     // architecture_plans.arch_class_name
  nlohmann::json citations = nlohmann::json::array();
  std::string source;  // the file, for messages
};

// nnssl's adaptation plan (AdaptationPlan.serialize()) with the checkpoint's weights. Throws FileError(source, ...)
// naming a missing or mistyped key.
PretrainedEncoder pretrained_encoder_from_nnssl(std::vector<std::pair<std::string, at::Tensor>> weights,
                                                const nlohmann::json& adaptation_plan, nlohmann::json citations,
                                                const std::string& source);

// How the pretrained encoder must fit the network's (EncoderFit, training/trainer_config.h):
//   Strict: every tensor, of the same shape (PretrainedTrainer);
//   Dynamic (DynamicPretrainedTrainer): a convolution whose kernel is 1 along an axis where the pretrained one is
//     larger takes the pretrained kernel's mean along it; tensors the network lacks (a deeper pretrained encoder) or
//     of another shape are left out, and the network's own that the file lacks (a deeper network) keep their
//     initialisation (load_weights_utils.py, adapt_encoder_weights_for_architecture).
struct EncoderLoadReport {
  int64_t loaded = 0;              // tensors copied into the stem and encoder
  bool channels_repeated = false;  // a one-channel stem spread over the network's channels
  bool position_embedding_resized = false;
  int64_t kernels_averaged = 0;  // Dynamic: convolutions averaged to the network's kernel
  int64_t left_out = 0;          // Dynamic: pretrained tensors without a place of their shape
  int64_t kept_initialised = 0;  // Dynamic: the network's stem and encoder tensors the file did not give
};

// Copies `enc`'s stem and encoder into `net`, built for patches of `patch_size`. Throws FileError(enc.source, ...)
// when the network has no encoder to take (SwinUNETR), or (Strict) a tensor under the stem or encoder is missing,
// extra or of another shape after the adaptations (another architecture), or (Dynamic) not one tensor fits; `net`
// is unchanged then.
EncoderLoadReport load_pretrained_encoder(models::SegmentationNetworkImpl& net, const PretrainedEncoder& enc,
                                          const std::vector<int64_t>& patch_size, EncoderFit fit = EncoderFit::Strict);

}  // namespace medseg::training
