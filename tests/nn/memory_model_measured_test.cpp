// The byte memory model (planning/memory_model.h) against the peak of real CPU training steps counted
// by the allocator (bench/bench_support/memory_probe.h): planner-made PlainConvUNet 2d and ResidualEncoderUNet 3d,
// tiny patches, AMP off and bf16. The measured side is independent of the model: real network, loss,
// optimizer and autograd. Bigger rows: scripts/bench/bench_memory_model.sh (docs/plans.md).
#include <gtest/gtest.h>

#include <cmath>

#include "core/torch_compat.h"
#include "bench_support/memory_probe.h"

using namespace medseg;

namespace {

// Smallest patch the network takes: the product of its strides per axis, times `scale`.
std::vector<int> min_patch(const nlohmann::json& arch, int scale) {
  const auto& strides = arch.at("arch_kwargs").at("strides");
  std::vector<int> p(strides.at(0).size(), scale);
  for (const auto& s : strides)
    for (std::size_t i = 0; i < p.size(); ++i) p[i] *= s.at(i).get<int>();
  return p;
}

bench::MemoryProbeResult probe(const std::string& planner, const std::string& config, bool amp, int scale, int batch) {
  bench::MemoryProbeConfig c;
  c.name = planner + " " + config;
  c.architecture = bench::planned_architecture(planner, config, {24, 40, 40}, 1, 3);
  c.patch = min_patch(c.architecture, scale);
  c.batch = batch;
  c.amp = amp;
  c.threads = 2;
  return bench::probe_training_step(c);
}

void expect_within(const bench::MemoryProbeResult& r, double tol = 0.15) {
  EXPECT_LE(std::fabs(r.ratio() - 1.0), tol) << r.to_json().dump(1);
  // The probe measures what it says: fp32 weights and one SGD momentum buffer per parameter between
  // steps (bar the lowest head, whose deep-supervision weight is 0: no gradient, no buffer; < 0.1 %).
  EXPECT_LE(r.static_bytes, 8 * r.parameters);
  EXPECT_GE(r.static_bytes, 0.999 * 8 * r.parameters);
  EXPECT_GT(r.measured_peak, r.static_bytes + r.batch_bytes);
}

// One training step of dynamic-network-architectures' Primus class `cls` (Primus, PrimusV2, PrimusV3) as the
// Primus trainers set it up (layer scale, inner norm, AdamW, no deep supervision; 96 wide, 3 blocks of 4 heads):
// the model within 15 % of the measured peak, and the static bytes the weights and AdamW's two moments.
void expect_primus_step_modelled(const std::string& cls, const std::vector<int>& patch, bool amp, bool ckpt) {
  bench::MemoryProbeConfig c;
  c.name = cls;
  c.architecture = {{"network_class_name", "dynamic_network_architectures.architectures.primus." + cls},
                    {"arch_kwargs",
                     {{"embed_dim", 96},
                      {"eva_depth", 3},
                      {"eva_numheads", 4},
                      {"init_values", 0.1},
                      {"scale_attn_inner", true},
                      {"input_shape", patch}}}};
  c.patch = patch;
  c.batch = 2;
  c.amp = amp;
  c.optimizer = training::OptimizerType::AdamW;
  c.deep_supervision = false;
  c.checkpoint_encoder = ckpt;
  const bench::MemoryProbeResult r = bench::probe_training_step(c);
  SCOPED_TRACE(r.to_json().dump());
  EXPECT_LE(std::fabs(r.ratio() - 1.0), 0.15);
  EXPECT_NEAR(static_cast<double>(r.static_bytes), 12.0 * static_cast<double>(r.parameters),
              0.01 * 12.0 * static_cast<double>(r.parameters));
}

}  // namespace

TEST(MemoryModelMeasured, PlainConvUNet2dFp32AndBf16) {
  for (bool amp : {false, true}) {
    SCOPED_TRACE(amp ? "bf16" : "fp32");
    expect_within(probe("ExperimentPlanner", "2d", amp, 4, 2));
  }
}

TEST(MemoryModelMeasured, ResidualEncoderUNet3dFp32AndBf16) {
  for (bool amp : {false, true}) {
    SCOPED_TRACE(amp ? "bf16" : "fp32");
    expect_within(probe("nnUNetPlannerResEncM", "3d_fullres", amp, 2, 1));
  }
}

// Primus (the trainers' layer scale and inner norm) on 32^3 tiles of 8^3 patches (64 tokens) and on 16 x 64 x 64
// (256 tokens), with the Primus trainers' AdamW and no deep supervision; checkpointing each EVA block too.
TEST(MemoryModelMeasured, PrimusFp32AndBf16) {
  // LibTorch 1.13 has no fused attention kernel (compat::scaled_dot_product_attention writes it out and keeps
  // the token-by-token weights), which the memory model, made for the default build, does not count.
  if (compat::torch_version().rfind("1.", 0) == 0) GTEST_SKIP() << "LibTorch " << compat::torch_version();
  for (const std::vector<int>& patch : {std::vector<int>{32, 32, 32}, std::vector<int>{16, 64, 64}})
    for (bool amp : {false, true})
      for (bool ckpt : {false, true}) expect_primus_step_modelled("Primus", patch, amp, ckpt);
}

// PrimusV2 and PrimusV3 as nnU-Net's trainers build them (their residual patch embeddings at full resolution:
// 32 channels on the whole patch, V3 up to 1024 channels at 1/8) on 32^3 tiles, fp32 and bf16.
TEST(MemoryModelMeasured, PrimusV2AndV3Fp32AndBf16) {
  if (compat::torch_version().rfind("1.", 0) == 0) GTEST_SKIP() << "LibTorch " << compat::torch_version();
  for (const std::string version : {"PrimusV2", "PrimusV3"})
    for (bool amp : {false, true}) expect_primus_step_modelled(version, {32, 32, 32}, amp, /*ckpt=*/false);
}
