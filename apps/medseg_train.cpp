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
#include "core_torch/torch_info.h"
#include "core_torch/torch_memory.h"
#include "distributed/join.h"
#include "distributed/process_group.h"
#include "distributed/world.h"
#include "sharing/nnssl_checkpoint.h"
#include "training/pretrained_encoder.h"
#include "training/rank_fit.h"
#include "training/run_folder.h"
#include "training/trainer.h"
#include "training/trainer_config.h"

namespace {

namespace training = medseg::training;
namespace distributed = medseg::distributed;

// The command line, as given.
struct TrainArgs {
  std::string dataset, configuration, fold, plans = "nnUNetPlans", trainer = "nnUNetTrainer";
  std::string amp, augment_device, device = "cpu", cudnn = "on", preprocessed, results, inplace;
  bool resume = false, val = false, val_best = false, no_pbar = false, from_scratch = false;
  training::TrainOptions opt;
  int64_t epochs = 0, iters = 0, val_iters = 0, ckpt_every = 0;
  int workers = 0, nproc = 0, num_gpus = 0, dist_timeout = 60;
  // The overrides whose presence matters (a given --epochs 0 is an error, not the config's default).
  CLI::Option *o_epochs = nullptr, *o_iters = nullptr, *o_val_iters = nullptr, *o_workers = nullptr;
  CLI::Option *o_ckpt = nullptr, *o_threads = nullptr;
};

void declare(CLI::App& app, TrainArgs& a) {
  app.add_option("dataset", a.dataset, "Dataset id or name")->required();
  app.add_option("configuration", a.configuration, "Configuration (2d, 3d_fullres, 3d_lowres, ...)")->required();
  app.add_option("fold", a.fold, "Fold 0-4, or 'all'")->required();
  app.add_option("-p", a.plans, "Plans name")->capture_default_str();
  app.add_option(
         "--tr", a.trainer,
         "Trainer config: a name under configs/, an nnU-Net trainer variant (docs/trainer_variants.md) or a JSON file")
      ->capture_default_str();
  app.add_flag("--c", a.resume, "Continue from the newest of checkpoint_final/latest/best");
  app.add_flag("--val", a.val, "Only run the final validation of a finished fold (checkpoint_final)");
  app.add_flag("--val_best", a.val_best, "With --val: use checkpoint_best");
  app.add_flag("--npz", a.opt.save_probabilities,
               "Final validation also writes CASE_probabilities.npy/.json (as medseg_predict --save_probabilities)");
  app.add_option("--device", a.device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--amp", a.amp,
                 "Mixed precision: fp16 (CUDA), bf16, off (default: the trainer config's; auto = fp16 on CUDA)");
  app.add_option("--cudnn-benchmark", a.cudnn, "cuDNN autotuning: on|off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_flag("--deterministic", a.opt.deterministic, "Deterministic algorithms (bit-exact resume on CPU)");
  a.o_epochs = app.add_option("--epochs", a.epochs, "Override the number of epochs (1..1000000)");
  a.o_iters = app.add_option("--iters-per-epoch", a.iters, "Override training iterations per epoch (1..1000000)");
  a.o_val_iters =
      app.add_option("--val-iters-per-epoch", a.val_iters, "Override validation iterations per epoch (0..1000000)");
  a.o_workers = app.add_option("--num-workers", a.workers, "Data pipeline worker threads (0..1024)");
  app.add_option("--augment_device", a.augment_device,
                 "Where training augmentation runs: cpu (loader workers), cuda (on the batch on the GPU), cpu_batched "
                 "(the batched path on CPU tensors) (default: the trainer config's)")
      ->check(CLI::IsMember({"cpu", "cuda", "cpu_batched"}));
  a.o_ckpt = app.add_option("--checkpoint-every", a.ckpt_every, "Epochs between checkpoint_latest writes (1..1000000)");
  a.o_threads = app.add_option("--threads", a.opt.threads, "Torch intra-op threads, 1..4096 (default: all cores)");
  app.add_option("--preprocessed", a.preprocessed, "Preprocessed root (default: $MEDSEG_PREPROCESSED)");
  app.add_option("--results", a.results, "Results root (default: $MEDSEG_RESULTS)");
  app.add_flag("--no_pbar", a.no_pbar, "No progress bar");
  app.add_option("--nproc_per_node", a.nproc,
                 "Data parallelism: start N local ranks (re-executes itself; docs/distributed.md)")
      ->check(CLI::Range(1, 1024));
  app.add_option(
         "--spatial_parallel", a.opt.spatial_parallel,
         "Spatial parallelism: N local ranks share every patch in slabs (halo exchange; batch 1 volumes too large "
         "for one device; docs/spatial_parallel.md)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--num_gpus", a.num_gpus, "nnU-Net's -num_gpus: N local ranks, one GPU each (--device cuda)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--dist-timeout", a.dist_timeout, "Seconds a rank waits for the others before it gives up (1..86400)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option(
      "--pretrained_weights", a.opt.pretrained_weights,
      "Start a new run from this checkpoint's weights (fine-tuning; segmentation heads skipped when the labels "
      "differ)");
  app.add_flag("--from_scratch", a.from_scratch,
               "A fine-tuning trainer (PretrainedTrainer...) without its pretrained weights: the same recipe from a "
               "fresh network, at the trainer's from-scratch learning rate (nnUNetv2_train_pretrained --from_scratch)");
  app.add_option("--inplace", a.inplace,
                 "In-place activations: auto (on for one process, off with several ranks), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
}

// Flags that contradict each other; the number of local ranks to start (0: this is one process or a rank).
int local_ranks(const TrainArgs& a) {
  if (a.resume && a.val) throw medseg::Error("--c and --val are mutually exclusive");
  if (a.from_scratch && !a.opt.pretrained_weights.empty())
    throw medseg::Error("--from_scratch and --pretrained_weights contradict each other");
  if (!a.opt.pretrained_weights.empty() && (a.resume || a.val))
    throw medseg::Error(std::string("-pretrained_weights starts a new run: it cannot be combined with ") +
                        (a.resume ? "--c" : "--val"));
  MEDSEG_CHECK(a.nproc <= 0 || a.num_gpus <= 0 || a.nproc == a.num_gpus, "--nproc_per_node ", a.nproc,
               " and -num_gpus ", a.num_gpus, " disagree");
  int ranks = std::max(a.nproc, a.num_gpus);
  if (a.opt.spatial_parallel > 1) {
    MEDSEG_CHECK(ranks <= 0 || ranks == a.opt.spatial_parallel, "--spatial_parallel ", a.opt.spatial_parallel,
                 " needs ", a.opt.spatial_parallel, " ranks, not ", ranks,
                 " (data x space grids are not supported yet)");
    ranks = a.opt.spatial_parallel;
  }
  return ranks;
}

// The trainer config named by --tr with the command line's overrides, each range-checked like the key it
// replaces.
training::TrainerConfig trainer_config(const TrainArgs& a) {
  const auto given = [](const CLI::Option* o, const char* key, double value) {
    if (o->count() == 0) return false;
    training::check_trainer_setting(key, value, o->get_name());
    return true;
  };
  auto cfg = training::find_trainer_config(a.trainer);
  if (given(a.o_epochs, "num_epochs", static_cast<double>(a.epochs))) cfg.num_epochs = a.epochs;
  if (given(a.o_iters, "iterations_per_epoch", static_cast<double>(a.iters))) cfg.iterations_per_epoch = a.iters;
  if (given(a.o_val_iters, "val_iterations_per_epoch", static_cast<double>(a.val_iters)))
    cfg.val_iterations_per_epoch = a.val_iters;
  if (given(a.o_workers, "num_workers", a.workers)) cfg.num_workers = a.workers;
  if (!a.augment_device.empty())
    cfg.augment_device = medseg::parse_name(training::augment_device_names(), a.augment_device, "--augment_device");
  if (given(a.o_ckpt, "checkpoint_every", static_cast<double>(a.ckpt_every))) cfg.checkpoint_every = a.ckpt_every;
  given(a.o_threads, "threads", a.opt.threads);
  return cfg;
}

// A rank started by a launcher joins the others (distributed/join.h) and takes their device and threads.
void join_if_rank(TrainArgs& a) {
  const auto world = distributed::world_from_environment();
  if (!world.distributed()) return;
  training::check_ranks_fit(training::read_run_plan(a.dataset, a.configuration, a.plans, a.preprocessed),
                            world.world_size, a.opt.spatial_parallel);
  distributed::RankSettings rs;
  rs.device = a.device;
  rs.threads = a.o_threads->count() ? a.opt.threads : 0;
  rs.host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  rs.timeout_s = a.dist_timeout;
  rs.nccl = a.device.rfind("cuda", 0) == 0;
  rs.program = "medseg_train";
  auto joined = distributed::join_ranks(world, rs);
  a.device = joined.device;
  a.opt.threads = joined.threads;
  a.no_pbar = a.no_pbar || joined.quiet;
  a.opt.group = std::move(joined.group);
}

// The pretrained weights a run starts from: --pretrained_weights, else a fine-tuning trainer's plans'
// pretrain_info.checkpoint_path (nnUNetv2_preprocess_like_nnssl writes it), none with --from_scratch.
std::string pretrained_file(const TrainArgs& a, const training::TrainerConfig& cfg, const medseg::json& plans) {
  if (!a.opt.pretrained_weights.empty() || a.from_scratch || !cfg.lr_from_scratch) return a.opt.pretrained_weights;
  const medseg::json info = plans.value("pretrain_info", medseg::json());
  if (info.is_object() && info.contains("checkpoint_path") && info.at("checkpoint_path").is_string())
    return info.at("checkpoint_path").get<std::string>();
  throw medseg::Error("trainer '" + cfg.name +
                      "' fine-tunes pretrained weights: give --pretrained_weights FILE, plans whose pretrain_info "
                      "names a checkpoint_path (docs/finetuning.md), or --from_scratch");
}

// Fine-tuning (docs/finetuning.md): an nnssl checkpoint's encoder for a new run, and the trainer's learning rate
// for a run with or without pretrained weights (also when it resumes, so the rate stays the run's).
void choose_pretrained(TrainArgs& a, training::TrainerConfig& cfg, const training::RunInputs& in) {
  const std::string file = pretrained_file(a, cfg, in.plans_json);
  if (cfg.lr_from_scratch && file.empty()) {
    cfg.optimizer.lr = *cfg.lr_from_scratch;
    spdlog::info("trainer '{}' from scratch: initial learning rate {}", cfg.name, cfg.optimizer.lr);
  }
  if (file.empty() || a.resume || a.val) return;
  if (!medseg::sharing::is_torch_save_file(file)) {  // a medseg checkpoint: training/pretrained.h
    a.opt.pretrained_weights = file;
    return;
  }
  auto ck = medseg::sharing::read_nnssl_checkpoint(file);
  a.opt.pretrained_encoder = std::make_shared<training::PretrainedEncoder>(training::pretrained_encoder_from_nnssl(
      std::move(ck.weights), ck.adaptation_plan, std::move(ck.citations), file));
  a.opt.pretrained_weights.clear();
}

// One process's (or one rank's) training or final validation.
int train(TrainArgs& a, training::TrainerConfig cfg) {
  a.opt.device = a.device;
  a.opt.cudnn_benchmark = a.cudnn;
  a.opt.resume = a.resume;
  a.opt.progress_bar = !a.no_pbar;
  medseg::set_progress_bars_enabled(!a.no_pbar);
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
  training::RunInputs inputs;
  // Rank 0 first: a missing splits_final.json is written once, then read by the others.
  distributed::agree(
      a.opt.group.get(), "reading the run's inputs",
      [&] {
        inputs =
            training::resolve_run(a.dataset, a.configuration, a.fold, a.plans, cfg.name, a.preprocessed, a.results);
      },
      /*rank0_first=*/true);
  choose_pretrained(a, cfg, inputs);
  training::Trainer t(std::move(inputs), cfg, a.opt);
  if (a.val) {
    t.validate(a.val_best ? medseg::checkpoint::kCheckpointBest : medseg::checkpoint::kCheckpointFinal);
    return 0;
  }
  if (t.run() == training::TrainOutcome::Interrupted) {
    std::fprintf(stderr, "medseg_train: interrupted; resume with --c\n");
    return 130;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train one fold (nnU-Net's nnUNetv2_train)", "medseg_train"};
  TrainArgs a;
  declare(app, a);
  return medseg::cli::run(argc, argv, app, [&] {
    const int ranks = local_ranks(a);
    if (a.num_gpus > 0 && a.device == "cpu") a.device = "cuda";
    if (!a.inplace.empty()) a.opt.inplace = training::parse_inplace(a.inplace, "--inplace");
    if (!a.amp.empty()) a.opt.amp = medseg::parse_amp(a.amp, "--amp");
    const training::TrainerConfig cfg = trainer_config(a);
    // The launcher: checked its flags above, now starts the ranks (which find RANK set and train). What the
    // plan alone rules out is refused once, before a rank starts or waits for the others.
    if (distributed::is_launcher(ranks)) {
      training::check_ranks_fit(training::read_run_plan(a.dataset, a.configuration, a.plans, a.preprocessed), ranks,
                                a.opt.spatial_parallel);
      return distributed::launch_ranks(ranks, std::vector<std::string>(argv, argv + argc), "medseg_train",
                                       a.dist_timeout);
    }
    join_if_rank(a);
    medseg::enable_cpu_block_cache();  // an iteration reuses the last one's activations (docs/training.md)
    return train(a, cfg);
  });
}
