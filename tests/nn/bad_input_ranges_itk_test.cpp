// Out-of-range plans and trainer-config values (issue 15): each is refused where it is read, by every
// CLI that reads it, with one line naming the file and the key, before anything is allocated or
// written. Absurd but well-formed sizes are refused by the memory check instead of failing in torch.
// One table row per bad value; the same plans rows run through medseg_preprocess, medseg_train,
// medseg_predict and medseg_model_info (each reads plans for its own purpose).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "support/bad_input.h"

namespace fs = std::filesystem;
using namespace medseg;
using medseg::test::Workspace;

namespace {

enum Cli { kPreprocess = 1, kTrain = 2, kPredict = 4, kModelInfo = 8, kAll = 15, kNoModelInfo = 7 };

struct PlansRow {
  // A constructor, not an aggregate: most rows leave the CLI mask and the environment at their defaults.
  PlansRow(std::string n, std::string p, json v, std::vector<std::string> f, int c = kAll, std::string e = "")
      : name(std::move(n)),
        pointer(std::move(p)),
        value(std::move(v)),
        fragments(std::move(f)),
        clis(c),
        env(std::move(e)) {}
  std::string name;
  std::string pointer;  // JSON pointer; relative to configurations/3d_fullres unless it starts with '!'
  json value;
  std::vector<std::string> fragments;
  int clis = kAll;
  std::string env;  // extra environment (a fixed memory limit)
};

const std::string kArch = "/architecture/arch_kwargs";

std::vector<PlansRow> plans_rows() {
  return {
      {"batch 0", "/batch_size", 0, {"key 'batch_size' is 0 (must be 1..65536)"}},
      {"batch 10^12", "/batch_size", 1000000000000LL, {"key 'batch_size' is 1000000000000 (expected an integer"}},
      {"batch 2.5", "/batch_size", 2.5, {"key 'batch_size' is 2.5 (expected an integer"}},
      {"patch 0", "/patch_size", {0, 14, 12}, {"key 'patch_size'[0] is 0 (must be 1..16384)"}},
      {"patch negative", "/patch_size", {-14, 14, 12}, {"key 'patch_size'[0] is -14"}},
      {"patch not divisible by the strides",
       "/patch_size",
       {15, 14, 12},
       {"key 'patch_size'[0] is 15, not divisible by the network's total stride 2"}},
      {"stride 0", kArch + "/strides", {{1, 1, 1}, {0, 2, 2}}, {"key 'strides'[1][0] is 0 (must be 1..16)"}},
      {"features 0", kArch + "/features_per_stage", {32, 0}, {"key 'features_per_stage'[1] is 0"}},
      {"features 10^6",
       kArch + "/features_per_stage",
       {32, 1000000},
       {"key 'features_per_stage'[1] is 1000000 (must be 1..16384)"}},
      {"n_stages 0", kArch + "/n_stages", 0, {"key 'n_stages' is 0 (must be 1..32)"}},
      {"n_stages 10^9", kArch + "/n_stages", 1000000000, {"key 'n_stages' is 1000000000"}},
      {"even kernel", kArch + "/kernel_sizes", {{3, 3, 3}, {2, 3, 3}}, {"key 'kernel_sizes'[1][0] is 2 (must be odd)"}},
      {"n_conv_per_stage 0", kArch + "/n_conv_per_stage", {2, 0}, {"key 'n_conv_per_stage'[1] is 0"}},
      {"decoder convs 0", kArch + "/n_conv_per_stage_decoder", {0}, {"key 'n_conv_per_stage_decoder'[0] is 0"}},
      {"norm eps negative", kArch + "/norm_op_kwargs/eps", -1.0, {"key 'norm_op_kwargs.eps'"}},
      {"spacing 0", "/spacing", {0.0, 1.0, 1.0}, {"key 'spacing'[0] is 0"}, kNoModelInfo},
      {"spacing negative", "/spacing", {1.0, -1.0, 1.0}, {"key 'spacing'[1] is -1"}, kNoModelInfo},
      {"unknown normalization",
       "/normalization_schemes",
       {"FooNormalization"},
       {"'FooNormalization' is not a normalization scheme"},
       kNoModelInfo},
      {"resampling order 7", "/resampling_fn_data_kwargs/order", 7, {"key 'order' is 7 (must be 0..5)"}, kNoModelInfo},
      {"duplicate transpose axes",
       "!/transpose_forward",
       {0, 0, 1},
       {"key 'transpose_forward' is [0,0,1]"},
       kNoModelInfo},
      // Well-formed but absurd: the memory check refuses before anything is allocated.
      {"patch 4096^3",
       "/patch_size",
       {4096, 4096, 4096},
       {"configuration '3d_fullres'", "GiB, more than the"},
       kTrain | kPredict | kModelInfo},
      {"features 16384 with a 4 GiB limit",
       kArch + "/features_per_stage",
       {16384, 16384},
       {"configuration '3d_fullres'", "more than the 4.0 GiB of MEDSEG_MEMORY_LIMIT_GIB"},
       kTrain | kPredict | kModelInfo,
       "MEDSEG_MEMORY_LIMIT_GIB=4"},
  };
}

void set_value(const std::string& file, const PlansRow& row) {
  const std::string ptr = row.pointer[0] == '!' ? row.pointer.substr(1) : "/configurations/3d_fullres" + row.pointer;
  test::edit_json(file, [&](json& j) { j[json::json_pointer(ptr)] = row.value; });
}

std::string tiny_trainer(const Workspace& ws, const json& extra = json::object()) {
  json cfg = {{"name", "Tiny"},
              {"num_epochs", 1},
              {"iterations_per_epoch", 1},
              {"val_iterations_per_epoch", 1},
              {"num_workers", 0}};
  cfg.update(extra);
  const std::string path = ws / "tiny.json";
  write_json(path, cfg);
  return path;
}

// Runs every row meant for `cli`: `prepare` edits the row's workspace copy and returns the command.
void run_plans_rows(Cli cli, const std::string& app, const std::string& plans_file_name, Workspace::Parts parts,
                    const std::function<std::string(const Workspace&, const PlansRow&)>& prepare) {
  const Workspace base(parts);
  for (const PlansRow& row : plans_rows()) {
    if (!(row.clis & cli)) continue;
    SCOPED_TRACE(app + ": " + row.name);
    const Workspace ws = base.copy();
    const std::string args = prepare(ws, row);
    const auto before = test::snapshot(ws.root());
    const auto r = test::run_cli(app, args, ws.env() + (row.env.empty() ? "" : " " + row.env));
    auto fragments = row.fragments;
    fragments.push_back(plans_file_name);
    test::expect_refused(r, app, fragments);
    EXPECT_EQ(test::snapshot_diff(before, test::snapshot(ws.root())), "") << r.output;
  }
}

}  // namespace

TEST(BadInputRanges, PlansValuesThroughPreprocess) {
  run_plans_rows(kPreprocess, "medseg_preprocess", "nnUNetPlans.json", {false, false},
                 [](const Workspace& ws, const PlansRow& row) {
                   set_value(ws.plans(), row);
                   return std::string("-d 901 -c 3d_fullres --np 1 --no-progress");
                 });
}

TEST(BadInputRanges, PlansValuesThroughTrain) {
  run_plans_rows(kTrain, "medseg_train", "nnUNetPlans.json", {true, false},
                 [](const Workspace& ws, const PlansRow& row) {
                   set_value(ws.plans(), row);
                   return "901 3d_fullres 0 --threads 1 --no_pbar --tr " + tiny_trainer(ws);
                 });
}

TEST(BadInputRanges, PlansValuesThroughPredict) {
  run_plans_rows(kPredict, "medseg_predict", "/plans.json", {false, true},
                 [](const Workspace& ws, const PlansRow& row) {
                   set_value(ws.model() + "/plans.json", row);
                   return "-m " + ws.model() + " -i " + ws.raw() + "/imagesTs -o " + (ws / "out") +
                          " --disable_progress_bar --tile_batch 1 --threads 1";
                 });
}

TEST(BadInputRanges, PlansValuesThroughModelInfo) {
  run_plans_rows(kModelInfo, "medseg_model_info", "nnUNetPlans.json", {false, false},
                 [](const Workspace& ws, const PlansRow& row) {
                   set_value(ws.plans(), row);
                   return "--plans " + ws.plans() + " --dataset-json " + ws.pp() + "/dataset.json -c 3d_fullres";
                 });
}

TEST(BadInputRanges, TrainerConfigValues) {
  struct Row {
    std::string name;
    json settings;  // merged into the tiny config
    std::string fragment;
  };
  const std::vector<Row> rows = {
      {"ema_momentum 1.5", {{"ema_momentum", 1.5}}, "key 'ema_momentum' is 1.5 (must be >= 0 and <= 1)"},
      {"ema_momentum -0.1", {{"ema_momentum", -0.1}}, "key 'ema_momentum' is -0.1"},
      {"grad_clip -1", {{"grad_clip", -1}}, "key 'grad_clip' is -1"},
      {"grad_clip 0", {{"grad_clip", 0}}, "key 'grad_clip' is 0 (must be > 0 and <= 1000000)"},
      {"oversample_foreground 1.5", {{"oversample_foreground", 1.5}}, "key 'oversample_foreground' is 1.5"},
      {"num_workers -1", {{"num_workers", -1}}, "key 'num_workers' is -1 (must be 0..1024)"},
      {"lr negative", {{"optimizer", {{"lr", -0.01}}}}, "key 'optimizer.lr' is -0.01 (must be > 0 and <= 10)"},
      {"lr 0", {{"optimizer", {{"lr", 0}}}}, "key 'optimizer.lr' is 0"},
      {"lr 10^6", {{"optimizer", {{"lr", 1e6}}}}, "key 'optimizer.lr' is 1000000.0"},
      {"momentum 1.5",
       {{"optimizer", {{"momentum", 1.5}}}},
       "key 'optimizer.momentum' is 1.5 (must be >= 0 and <= 0.999999)"},
      {"weight_decay -1", {{"optimizer", {{"weight_decay", -1}}}}, "key 'optimizer.weight_decay' is -1"},
      {"nesterov without momentum",
       {{"optimizer", {{"momentum", 0}, {"nesterov", true}}}},
       "key 'optimizer.nesterov' needs a momentum > 0"},
      {"unknown optimizer key", {{"optimizer", {{"learning_rate", 0.1}}}}, "unknown key 'optimizer.learning_rate'"},
      {"num_epochs 0", {{"num_epochs", 0}}, "key 'num_epochs' is 0 (must be 1..1000000)"},
      {"num_epochs 1e20", {{"num_epochs", 1e20}}, "key 'num_epochs' is 1e+20 (must be 1..1000000)"},
      {"iterations_per_epoch 0", {{"iterations_per_epoch", 0}}, "key 'iterations_per_epoch' is 0"},
      {"seed -1", {{"seed", -1}}, "key 'seed' is -1 (expected an integer in 0..18446744073709551615)"},
      {"use_checkpoint 5", {{"use_checkpoint", 5}}, "key 'use_checkpoint' is 5 (must be -1..1)"},
  };
  const Workspace base({true, false});
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Workspace ws = base.copy();
    json settings = row.settings;
    if (settings.contains("optimizer")) {  // a complete SGD block with the row's value in it
      json opt = {{"type", "SGD"}, {"lr", 0.01}, {"momentum", 0.99}, {"nesterov", true}};
      opt.update(settings["optimizer"]);
      settings["optimizer"] = opt;
    }
    const std::string cfg = tiny_trainer(ws, settings);
    const auto before = test::snapshot(ws.root());
    const auto r = ws.run("medseg_train", "901 3d_fullres 0 --threads 1 --no_pbar --tr " + cfg);
    test::expect_refused(r, "medseg_train", {"tiny.json", row.fragment});
    EXPECT_EQ(test::snapshot_diff(before, test::snapshot(ws.root())), "") << r.output;
  }
}

TEST(BadInputRanges, TrainCommandLineOverrides) {
  // Each override given explicitly must be in range; "0" used to mean "not given" (--epochs 0 trained
  // the config's epochs, --threads 0 used every core).
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"--epochs 0", "--epochs is 0 (must be >= 1 and <= 1000000)"},
      {"--epochs=-1", "--epochs is -1"},
      {"--iters-per-epoch 0", "--iters-per-epoch is 0 (must be >= 1 and <= 1000000)"},
      {"--val-iters-per-epoch=-1", "--val-iters-per-epoch is -1 (must be >= 0 and <= 1000000)"},
      {"--num-workers=-1", "--num-workers is -1 (must be >= 0 and <= 1024)"},
      {"--checkpoint-every 0", "--checkpoint-every is 0"},
      {"--threads 0", "--threads is 0 (must be >= 1 and <= 4096)"},
      {"--threads=-2", "--threads is -2"},
  };
  const Workspace base({true, false});
  for (const auto& [flag, fragment] : rows) {
    SCOPED_TRACE(flag);
    const Workspace ws = base.copy();
    const std::string cfg = tiny_trainer(ws);
    const auto before = test::snapshot(ws.root());
    const auto r = ws.run("medseg_train", "901 3d_fullres 0 --no_pbar --tr " + cfg + " " + flag);
    test::expect_refused(r, "medseg_train", {fragment});
    EXPECT_EQ(test::snapshot_diff(before, test::snapshot(ws.root())), "") << r.output;
  }
}
