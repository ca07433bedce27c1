// medseg_bench_dataloader: patches per second of the training data loader (sampling, cropping,
// full nnU-Net augmentation, deep-supervision targets) with N worker threads, and patches per
// CPU-second (per core). Cases come from a preprocessed folder or are synthesised in memory.
// Used by scripts/bench/bench_dataloader.sh.
#include <ctime>
#include <chrono>
#include <cstdio>
#include <string>

#include "cli_common.h"
#include "core/error.h"
#include "core/volume.h"
#include "data/augment/device_augment.h"
#include "training/trainer_config.h"
#include "data/data_loader.h"
#include "data/preprocessed_source.h"
#include "bench_support/synthetic_cases.h"
#include "plans/plans.h"

using namespace medseg;
using namespace medseg::data;

namespace {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

planning::ConfigurationPlan plan_from_args(const std::string& plans_file, const std::string& config,
                                           const std::vector<int>& patch, int batch_size) {
  if (!plans_file.empty()) return planning::load_plans(plans_file).configuration(config);
  planning::ConfigurationPlan p;
  p.name = "bench";
  p.patch_size = patch;
  p.batch_size = batch_size;
  // Strides as the planner would give for the patch: halve every axis of >= 8 voxels per stage.
  std::vector<int> size = patch;
  p.architecture.strides.push_back(std::vector<int>(patch.size(), 1));
  for (int stage = 0; stage < 5; ++stage) {
    std::vector<int> s;
    bool any = false;
    for (auto& v : size) {
      const int st = v >= 8 ? 2 : 1;
      any = any || st == 2;
      s.push_back(st);
      v /= st;
    }
    if (!any) break;
    p.architecture.strides.push_back(s);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark the training data loader (patches/s and patches per CPU-second)", "medseg_bench_dataloader"};
  std::string plans_file, config = "3d_fullres", folder;
  std::vector<int> patch{32, 48, 48}, min_shape{32, 48, 48}, max_shape{40, 64, 64};
  std::vector<int> workers{1, 2};
  int batch_size = 2, cases = 24, channels = 1, labels = 2, batches = 20, warmup = 2;
  uint64_t seed = 7;
  bool no_augment = false;
  std::string augment_device = "cpu";
  app.add_option("--plans", plans_file, "plans.json: take patch, batch size and strides from it");
  app.add_option("-c,--configuration", config, "configuration in --plans")->capture_default_str();
  app.add_option("--preprocessed", folder, "folder of preprocessed cases (default: synthetic cases)");
  app.add_option("--patch", patch, "final patch (z y x) without --plans")->expected(3)->capture_default_str();
  app.add_option("--batch-size", batch_size, "batch size without --plans")->capture_default_str();
  app.add_option("--cases", cases, "synthetic cases")->capture_default_str();
  app.add_option("--min-shape", min_shape, "smallest synthetic case (z y x)")->expected(3);
  app.add_option("--max-shape", max_shape, "largest synthetic case (z y x)")->expected(3);
  app.add_option("--channels", channels, "synthetic channels")->capture_default_str();
  app.add_option("--labels", labels, "synthetic foreground labels")->capture_default_str();
  app.add_option("--workers", workers, "worker counts to measure")->capture_default_str();
  app.add_option("--batches", batches, "timed batches per worker count")->capture_default_str();
  app.add_option("--warmup", warmup, "untimed batches first")->capture_default_str();
  app.add_option("--seed", seed, "loader seed")->capture_default_str();
  app.add_flag("--no-augment", no_augment, "validation pipeline (crop only)");
  bool da5 = false;
  app.add_flag("--da5", da5, "nnUNetTrainerDA5's stronger augmentation instead of nnU-Net's default");
  app.add_option("--augment-device", augment_device,
                 "cpu (per sample in the workers), cpu_batched or cuda (the batched torch path on the consumer "
                 "thread, timed with it; docs/gpu_augmentation.md)")
      ->capture_default_str();
  return cli::run(argc, argv, app, [&] {
    const auto plan = plan_from_args(plans_file, config, patch, batch_size);
    std::shared_ptr<const CaseSource> src;
    if (!folder.empty()) {
      src = std::make_shared<PreprocessedCaseSource>(folder);
    } else {
      src = bench::make_synthetic_source(cases, {min_shape[0], min_shape[1], min_shape[2]},
                                         {max_shape[0], max_shape[1], max_shape[2]}, channels, labels, seed);
    }
    AugmentChoice choice;
    choice.da5 = da5;
    PipelineConfig cfg = no_augment ? validation_pipeline(plan) : training_pipeline(plan, true, 0.33, choice);
    const auto setting = medseg::parse_name(training::augment_device_names(), augment_device, "--augment-device");
    const auto device = augment::resolve_augment_device(
        setting, setting == augment::AugmentDevice::Cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU));
    cfg.device_augment = device.has_value() && !no_augment;
    // The batched path's output; reading one value waits for a CUDA device to finish it.
    auto take = [&](Batch b) {
      if (!b.device_input) return;
      const Batch out = augment::augment_batch_on_device(std::move(b), cfg, *device);
      (void)out.data.view(-1)[0].item<float>();
    };
    const std::string full = da5 ? "DA5 augmentation" : "full augmentation";
    const std::string mode = no_augment           ? "no augmentation"
                             : cfg.device_augment ? full + ", batched on " + device->str()
                                                  : full;
    std::printf("cases %lld (channels %lld), final patch %s, loader patch %s, batch %lld, %s%s\n",
                static_cast<long long>(src->size()), static_cast<long long>(src->channels()),
                shape_str(cfg.final_patch).c_str(), shape_str(cfg.loader_patch).c_str(),
                static_cast<long long>(cfg.batch_size), mode.c_str(), cfg.aug.dummy_2d ? " (dummy 2D)" : "");
    std::printf("%8s %10s %12s %12s %14s %12s\n", "workers", "wall_s", "patches/s", "ms/batch", "patches/cpu_s",
                "cpu_util");
    for (int w : workers) {
      LoaderOptions o;
      o.num_workers = w;
      o.batches_per_epoch = 1 << 20;
      DataLoader dl(src, cfg, o, {seed, 0, 0});
      for (int i = 0; i < warmup; ++i) take(dl.next());
      const double cpu0 = process_cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < batches; ++i) take(dl.next());
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = process_cpu_seconds() - cpu0;  // ahead-built work balances out
      const double patches = static_cast<double>(batches) * static_cast<double>(cfg.batch_size);
      std::printf("%8d %10.2f %12.2f %12.1f %14.2f %12.2f\n", w, wall, patches / wall, 1000.0 * wall / batches,
                  patches / cpu, cpu / wall);
      std::fflush(stdout);
    }
    return 0;
  });
}
