// The byte memory model (planning/memory_model.h) against the peak of real CPU training steps counted
// by the allocator (training/memory_probe.h): planner-made PlainConvUNet 2d and ResidualEncoderUNet 3d,
// tiny patches, AMP off and bf16. The measured side is independent of the model: real network, loss,
// optimizer and autograd. Bigger rows: scripts/bench/bench_memory_model.sh (docs/plans.md).
#include <gtest/gtest.h>

#include <cmath>

#include "training/memory_probe.h"

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

training::MemoryProbeResult probe(const std::string& planner, const std::string& config, bool amp, int scale,
                                  int batch) {
  training::MemoryProbeConfig c;
  c.name = planner + " " + config;
  c.architecture = training::planned_architecture(planner, config, {24, 40, 40}, 1, 3);
  c.patch = min_patch(c.architecture, scale);
  c.batch = batch;
  c.amp = amp;
  c.threads = 2;
  return training::probe_training_step(c);
}

void expect_within(const training::MemoryProbeResult& r, double tol = 0.15) {
  EXPECT_LE(std::fabs(r.ratio() - 1.0), tol) << r.to_json().dump(1);
  // The probe measures what it says: fp32 weights and one SGD momentum buffer per parameter between
  // steps (bar the lowest head, whose deep-supervision weight is 0: no gradient, no buffer; < 0.1 %).
  EXPECT_LE(r.static_bytes, 8 * r.parameters);
  EXPECT_GE(r.static_bytes, 0.999 * 8 * r.parameters);
  EXPECT_GT(r.measured_peak, r.static_bytes + r.batch_bytes);
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
