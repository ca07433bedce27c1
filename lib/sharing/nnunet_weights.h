#pragma once
// What an imported nnU-Net checkpoint must agree with before medseg writes it as a model: the network
// that plans.json and dataset.json describe (issue 42: a state dict with missing, extra, wrong-shape,
// non-float or non-finite tensors, or a configuration the plans lack, was written as a working model).
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "io/dataset.h"
#include "plans/plans.h"
#include "sharing/torch_pickle.h"

namespace medseg::sharing {

// A checkpoint's network_weights (a dict of named tensors) in medseg's names: "module." and "_orig_mod."
// prefixes stripped (DDP, torch.compile) and nnU-Net's aliases dropped (decoder.encoder.*, *.all_modules.*),
// each after checking that a kept tensor holds its values. Throws FileError(pth, ...) for anything else
// in the dict, for NaN or infinite values and for an alias no kept tensor equals. `dropped` counts aliases.
checkpoint::NamedTensors weights_without_aliases(const PickleValue& weights, const std::string& pth, int64_t* dropped);

// The network one checkpoint's configuration builds: its inputs (the channels, plus one per
// foreground label for a cascade stage) and outputs (labels or regions).
struct ImportedShape {
  int64_t in_channels = 0;
  int64_t num_classes = 0;
};

// Throws FileError(pth, ...) when `configuration` is not in the plans (listing those that are), else
// its inputs and outputs.
ImportedShape imported_shape(const planning::Plans& plans, const io::DatasetInfo& dataset,
                             const std::string& configuration, const std::string& pth);

// Builds the configuration's network and refuses, naming `pth` and the key, any tensor the network lacks,
// any it needs that is missing, another shape, a dtype that is not floating point (or the network's own
// for a buffer). (NaN and infinite values are refused earlier, as the tensors are read.)
void check_weights_fit(const checkpoint::NamedTensors& weights, const planning::ConfigurationPlan& cfg,
                       const ImportedShape& shape, const std::string& pth);

// nnU-Net's inference_allowed_mirroring_axes as medseg keeps them: distinct integers in [0, dim), at
// most dim of them. Throws FileError(pth, ...) for anything else (a string, a fraction, 26 zeros).
std::vector<int64_t> checked_mirror_axes(const std::vector<int64_t>& axes, const std::vector<bool>& integral, int dim,
                                         const std::string& pth);

}  // namespace medseg::sharing
