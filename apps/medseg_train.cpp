// medseg_train: trains one fold of a configuration on preprocessed data (nnU-Net's nnUNetv2_train).
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "cli_common.h"
#include "core/amp.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/strings.h"
#include "core/torch_compat.h"
#include "core/torch_info.h"
#include "distributed/join.h"
#include "distributed/process_group.h"
#include "distributed/world.h"
#include "training/rank_fit.h"
#include "training/run_folder.h"
#include "training/trainer.h"
#include "training/trainer_config.h"

int main(int argc, char** argv) {
  CLI::App app{"Train one fold (nnU-Net's nnUNetv2_train)", "medseg_train"};
  std::string dataset, configuration, fold, plans = "nnUNetPlans", trainer = "nnUNetTrainer";
  std::string amp, augment_device, device = "cpu", cudnn = "on", preprocessed, results;
  bool resume = false, val = false, val_best = false, no_pbar = false;
  medseg::training::TrainOptions opt;
  int64_t epochs = 0, iters = 0, val_iters = 0, ckpt_every = 0;
  int workers = 0, nproc = 0, num_gpus = 0, dist_timeout = 60;
  std::string inplace;
  app.add_option("dataset", dataset, "Dataset id or name")->required();
  app.add_option("configuration", configuration, "Configuration (2d, 3d_fullres, 3d_lowres, ...)")->required();
  app.add_option("fold", fold, "Fold 0-4, or 'all'")->required();
  app.add_option("-p", plans, "Plans name")->capture_default_str();
  app.add_option(
         "--tr", trainer,
         "Trainer config: a name under configs/, an nnU-Net trainer variant (docs/trainer_variants.md) or a JSON file")
      ->capture_default_str();
  app.add_flag("--c", resume, "Continue from the newest of checkpoint_final/latest/best");
  app.add_flag("--val", val, "Only run the final validation of a finished fold (checkpoint_final)");
  app.add_flag("--val_best", val_best, "With --val: use checkpoint_best");
  app.add_flag("--npz", opt.save_probabilities,
               "Final validation also writes CASE_probabilities.npy/.json (as medseg_predict --save_probabilities)");
  app.add_option("--device", device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--amp", amp,
                 "Mixed precision: fp16 (CUDA), bf16, off (default: the trainer config's; auto = fp16 on CUDA)");
  app.add_option("--cudnn-benchmark", cudnn, "cuDNN autotuning: on|off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_flag("--deterministic", opt.deterministic, "Deterministic algorithms (bit-exact resume on CPU)");
  auto* o_epochs = app.add_option("--epochs", epochs, "Override the number of epochs (1..1000000)");
  auto* o_iters = app.add_option("--iters-per-epoch", iters, "Override training iterations per epoch (1..1000000)");
  auto* o_val_iters =
      app.add_option("--val-iters-per-epoch", val_iters, "Override validation iterations per epoch (0..1000000)");
  auto* o_workers = app.add_option("--num-workers", workers, "Data pipeline worker threads (0..1024)");
  app.add_option("--augment_device", augment_device,
                 "Where training augmentation runs: cpu (loader workers), cuda (on the batch on the GPU), cpu_batched "
                 "(the batched path on CPU tensors) (default: the trainer config's)")
      ->check(CLI::IsMember({"cpu", "cuda", "cpu_batched"}));
  auto* o_ckpt =
      app.add_option("--checkpoint-every", ckpt_every, "Epochs between checkpoint_latest writes (1..1000000)");
  auto* o_threads = app.add_option("--threads", opt.threads, "Torch intra-op threads, 1..4096 (default: all cores)");
  app.add_option("--preprocessed", preprocessed, "Preprocessed root (default: $MEDSEG_PREPROCESSED)");
  app.add_option("--results", results, "Results root (default: $MEDSEG_RESULTS)");
  app.add_flag("--no_pbar", no_pbar, "No progress bar");
  app.add_option("--nproc_per_node", nproc,
                 "Data parallelism: start N local ranks (re-executes itself; docs/distributed.md)")
      ->check(CLI::Range(1, 1024));
  app.add_option(
         "--spatial_parallel", opt.spatial_parallel,
         "Spatial parallelism: N local ranks share every patch in slabs (halo exchange; batch 1 volumes too large "
         "for one device; docs/spatial-parallel.md)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--num_gpus", num_gpus, "nnU-Net's -num_gpus: N local ranks, one GPU each (--device cuda)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--dist-timeout", dist_timeout, "Seconds a rank waits for the others before it gives up (1..86400)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option(
      "--pretrained_weights", opt.pretrained_weights,
      "Start a new run from this checkpoint's weights (fine-tuning; segmentation heads skipped when the labels "
      "differ)");
  app.add_option("--inplace", inplace,
                 "In-place activations: auto (on for one process, off with several ranks), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  return medseg::cli::run(argc, argv, app, [&] {
    if (resume && val) throw medseg::Error("--c and --val are mutually exclusive");
    if (!opt.pretrained_weights.empty() && (resume || val))
      throw medseg::Error(std::string("-pretrained_weights starts a new run: it cannot be combined with ") +
                          (resume ? "--c" : "--val"));
    if (nproc > 0 && num_gpus > 0 && nproc != num_gpus)
      throw medseg::Error("--nproc_per_node " + std::to_string(nproc) + " and -num_gpus " + std::to_string(num_gpus) +
                          " disagree");
    int local_ranks = std::max(nproc, num_gpus);
    if (opt.spatial_parallel > 1) {
      if (local_ranks > 0 && local_ranks != opt.spatial_parallel)
        throw medseg::Error("--spatial_parallel " + std::to_string(opt.spatial_parallel) + " needs " +
                            std::to_string(opt.spatial_parallel) + " ranks, not " + std::to_string(local_ranks) +
                            " (data x space grids are not supported yet)");
      local_ranks = opt.spatial_parallel;
    }
    if (num_gpus > 0 && device == "cpu") device = "cuda";
    if (!inplace.empty()) opt.inplace = medseg::training::parse_inplace(inplace, "--inplace");
    if (!amp.empty()) opt.amp = medseg::parse_amp(amp, "--amp");
    // An override that was given is range-checked like the config key it replaces: --epochs 0 is an
    // error, not the config's default.
    const auto given = [](const CLI::Option* o, const char* key, double value) {
      if (o->count() == 0) return false;
      medseg::training::check_trainer_setting(key, value, o->get_name());
      return true;
    };
    auto cfg = medseg::training::find_trainer_config(trainer);
    if (given(o_epochs, "num_epochs", static_cast<double>(epochs))) cfg.num_epochs = epochs;
    if (given(o_iters, "iterations_per_epoch", static_cast<double>(iters))) cfg.iterations_per_epoch = iters;
    if (given(o_val_iters, "val_iterations_per_epoch", static_cast<double>(val_iters)))
      cfg.val_iterations_per_epoch = val_iters;
    if (given(o_workers, "num_workers", workers)) cfg.num_workers = workers;
    if (!augment_device.empty()) cfg.augment_device = augment_device;
    if (given(o_ckpt, "checkpoint_every", static_cast<double>(ckpt_every))) cfg.checkpoint_every = ckpt_every;
    given(o_threads, "threads", opt.threads);
    // What the plan alone rules out is refused once, before a rank starts or waits for the others.
    const auto refuse_unfit = [&](int ranks) {
      medseg::training::check_ranks_fit(medseg::training::read_run_plan(dataset, configuration, plans, preprocessed),
                                        ranks, opt.spatial_parallel);
    };
    // The launcher: checked its flags above, now starts the ranks (which find RANK set and train).
    if (medseg::distributed::is_launcher(local_ranks)) {
      refuse_unfit(local_ranks);
      return medseg::distributed::launch_ranks(local_ranks, std::vector<std::string>(argv, argv + argc), "medseg_train",
                                               dist_timeout);
    }
    const auto world = medseg::distributed::world_from_environment();
    if (world.distributed()) {
      refuse_unfit(world.world_size);
      medseg::distributed::RankSettings rs;
      rs.device = device;
      rs.threads = o_threads->count() ? opt.threads : 0;
      rs.host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      rs.timeout_s = dist_timeout;
      rs.nccl = device.rfind("cuda", 0) == 0;
      rs.program = "medseg_train";
      auto joined = medseg::distributed::join_ranks(world, rs);
      device = joined.device;
      opt.threads = joined.threads;
      no_pbar = no_pbar || joined.quiet;
      opt.group = std::move(joined.group);
    }
    opt.device = device;
    opt.cudnn_benchmark = cudnn;
    opt.resume = resume;
    opt.progress_bar = !no_pbar;
    medseg::set_progress_bars_enabled(!no_pbar);
    spdlog::info("medseg_train: {}", medseg::torch_build_summary());
    // LibTorch's warnings as log lines. DDP's note that a gradient's strides differ from its
    // bucket's (the first convolution's weight gradient with one input channel) costs one copy
    // and nothing else: --verbose only.
    const medseg::compat::ScopedTorchWarnings torch_warnings([](const std::string& msg) {
      if (msg.find("Grad strides do not match bucket view strides") != std::string::npos)
        spdlog::debug("LibTorch: {}", medseg::one_line(msg));
      else
        spdlog::warn("LibTorch: {}", medseg::one_line(msg));
    });
    medseg::training::RunInputs inputs;
    // Rank 0 first: a missing splits_final.json is written once, then read by the others.
    medseg::distributed::agree(
        opt.group.get(), "reading the run's inputs",
        [&] {
          inputs = medseg::training::resolve_run(dataset, configuration, fold, plans, cfg.name, preprocessed, results);
        },
        /*rank0_first=*/true);
    medseg::training::Trainer t(std::move(inputs), cfg, opt);
    if (val) {
      t.validate(val_best ? medseg::checkpoint::kCheckpointBest : medseg::checkpoint::kCheckpointFinal);
      return 0;
    }
    const auto outcome = t.run();
    if (outcome == medseg::training::TrainOutcome::Interrupted) {
      std::fprintf(stderr, "medseg_train: interrupted; resume with --c\n");
      return 130;
    }
    return 0;
  });
}
