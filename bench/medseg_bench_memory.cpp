// medseg_bench_memory: the byte memory model (planning/memory_model.h) against the measured CPU peak of
// one real training step (bench/bench_support/memory_probe.h) for PlainConvUNet / ResidualEncoderUNet
// architectures planned by medseg's planner, 2d and 3d, AMP (bf16 autocast) off and on, SGD and AdamW,
// encoder checkpointing. Prints a Markdown table; scripts/bench/bench_memory_model.sh runs it.
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/strings.h"
#include "bench_support/memory_probe.h"

using namespace medseg;

namespace {

struct Row {
  std::string name, planner, configuration;
  bool amp;
  training::OptimizerType optimizer = training::OptimizerType::SGD;
  bool checkpoint = false;
};

std::string mib(int64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f", static_cast<double>(b) / (1 << 20));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Estimated vs measured peak bytes of one CPU training step", "medseg_bench_memory"};
  std::vector<int> patch3d{32, 32, 32}, patch2d{96, 96};
  std::vector<double> median{40, 56, 40};
  int batch3d = 2, batch2d = 4, threads = 2, labels = 3;
  double tolerance = 0.15;
  std::string json_out, only;
  app.add_option("--patch3d", patch3d, "3d patch (must be divisible by the network's total stride)")->expected(3);
  app.add_option("--patch2d", patch2d, "2d patch")->expected(2);
  app.add_option("--batch3d", batch3d, "3d batch size");
  app.add_option("--batch2d", batch2d, "2d batch size");
  app.add_option("--median-shape", median, "median case shape (1 mm) of the synthetic dataset that is planned")
      ->expected(3);
  app.add_option("--labels", labels, "labels of the synthetic dataset (background included)");
  app.add_option("--threads", threads, "torch intra-op threads");
  app.add_option("--tolerance", tolerance, "pass when |estimate/measured - 1| <= this");
  app.add_option("--only", only, "run only the rows whose name contains this");
  app.add_option("--json", json_out, "also write every row (measured phases, model breakdown) as JSON");
  return cli::run(argc, argv, app, [&] {
    const std::vector<Row> rows = {
        {"Plain 3d", "ExperimentPlanner", "3d_fullres", false},
        {"Plain 3d AMP", "ExperimentPlanner", "3d_fullres", true},
        {"ResEnc-M 3d", "nnUNetPlannerResEncM", "3d_fullres", false},
        {"ResEnc-M 3d AMP", "nnUNetPlannerResEncM", "3d_fullres", true},
        {"Plain 2d", "ExperimentPlanner", "2d", false},
        {"Plain 2d AMP", "ExperimentPlanner", "2d", true},
        {"ResEnc-M 2d", "nnUNetPlannerResEncM", "2d", false},
        {"ResEnc-M 2d AMP", "nnUNetPlannerResEncM", "2d", true},
        {"Plain 3d AdamW", "ExperimentPlanner", "3d_fullres", false, training::OptimizerType::AdamW},
        {"ResEnc-M 3d ckpt", "nnUNetPlannerResEncM", "3d_fullres", false, training::OptimizerType::SGD, true},
        {"ResEnc-M 3d AMP ckpt", "nnUNetPlannerResEncM", "3d_fullres", true, training::OptimizerType::SGD, true},
    };
    std::printf(
        "| config | patch × batch | params | estimated MiB | measured MiB | est/meas | peak phase (est / meas) | ±%.0f "
        "%% |\n",
        tolerance * 100);
    std::printf("|---|---|---|---|---|---|---|---|\n");
    nlohmann::json all = nlohmann::json::array();
    int failed = 0;
    for (const auto& row : rows) {
      if (!only.empty() && row.name.find(only) == std::string::npos) continue;
      bench::MemoryProbeConfig c;
      c.name = row.name;
      const bool is3d = row.configuration != "2d";
      c.architecture =
          bench::planned_architecture(row.planner, row.configuration, {median[0], median[1], median[2]}, 1, labels);
      c.patch = is3d ? patch3d : patch2d;
      c.batch = is3d ? batch3d : batch2d;
      c.num_classes = labels;
      c.amp = row.amp;
      c.optimizer = row.optimizer;
      c.checkpoint_encoder = row.checkpoint;
      c.threads = threads;
      const auto r = bench::probe_training_step(c);
      const int64_t m = r.measured_peak;
      const char* phase = m == r.peak_forward ? "forward" : m == r.peak_backward ? "backward" : "step";
      const bool ok = std::fabs(r.ratio() - 1.0) <= tolerance;
      failed += ok ? 0 : 1;
      std::printf("| %s | %s × %d | %.1f M | %s | %s | %.3f | %s / %s | %s |\n", row.name.c_str(),
                  join(c.patch, "×").c_str(), c.batch, static_cast<double>(r.parameters) / 1e6,
                  mib(r.estimate.peak_bytes).c_str(), mib(m).c_str(), r.ratio(), r.estimate.peak_phase.c_str(), phase,
                  ok ? "pass" : "FAIL");
      std::fflush(stdout);
      all.push_back(r.to_json());
    }
    if (!json_out.empty()) write_json(json_out, all);
    std::printf("\n%d of %zu rows outside ±%.0f %%\n", failed, all.size(), tolerance * 100);
    return failed ? 1 : 0;
  });
}
