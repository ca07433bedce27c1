#pragma once
// A training checkpoint as a plain struct, and its save/load through the MEDSEGCK container
// (container.h). A checkpoint carries copies of plans, dataset, trainer config and
// fingerprint so that a model folder alone is enough to predict.
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include <cstdint>
#include <string>

#include "checkpoint/container.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/rng_state.h"

namespace medseg::checkpoint {

struct Checkpoint {
  int64_t epoch = 0;         // number of finished epochs (the epoch to resume at)
  NamedTensors weights;      // parameters and buffers by name; aliases share storage
  OptimizerState optimizer;  // empty type = not saved (e.g. an inference-only export)
  nlohmann::json grad_scaler = nlohmann::json::object();
  RngStates rng;
  nlohmann::json sampler = nlohmann::json::object();  // data sampler position
  nlohmann::json logs = nlohmann::json::array();      // metrics log entries
  nlohmann::json ema = nullptr;                       // EMA pseudo Dice etc.
  nlohmann::json plans, trainer_config, fingerprint;  // copies of the JSON files
  nlohmann::ordered_json dataset;  // dataset.json's copy, keys in the file's order (region outputs follow it)
  nlohmann::json extra = nlohmann::json::object();  // trainer name, best EMA, mirroring axes...
  // Weights and the JSON copies only (medseg_checkpoint average): predicts, never continues a run.
  bool weights_only = false;
};

// Saves atomically; SIGKILL at any moment leaves either the previous file or the new one.
void save_checkpoint(const std::string& path, const Checkpoint& ck);

// Loads and verifies (checksum, version). Throws FileError naming the file and the problem.
Checkpoint load_checkpoint(const std::string& path);

// Parameters then buffers, with every name under which they are registered (aliases included).
NamedTensors module_weights(const torch::nn::Module& model);

// Copies `weights` into the module. Keys that alias in `weights` are made to alias in the module
// too. strict: every module key must be present and no extra key may exist.
void load_weights(torch::nn::Module& model, const NamedTensors& weights, bool strict = true);

// Prefixes of the tensor keys inside the container (documented in docs/checkpoints.md).
inline constexpr const char* kWeightsPrefix = "weights/";

// The checkpoint files of a model folder's fold_K/, as nnU-Net names them (with medseg's ending).
inline constexpr const char* kCheckpointFinal = "checkpoint_final.ckpt";
inline constexpr const char* kCheckpointLatest = "checkpoint_latest.ckpt";
inline constexpr const char* kCheckpointBest = "checkpoint_best.ckpt";

}  // namespace medseg::checkpoint
