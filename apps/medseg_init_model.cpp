// medseg_init_model: a model folder with freshly initialised (untrained) weights, in the layout the
// trainer writes. For benchmarks and smoke tests of medseg_predict without training first.
#include <cstdio>
#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core_torch/torch_memory.h"
#include "inference/model_folder.h"
#include "io/dataset.h"
#include "models/network.h"
#include "planning/memory_check.h"
#include "plans/plans.h"
#include "training/splits.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// Untrained weights must never silently replace a trained model: every target is checked before
// anything is written, so a refusal leaves the folder exactly as it was.
void refuse_existing(const std::string& output, const std::vector<std::string>& folds, const json& plans,
                     const ordered_json& dataset) {
  const std::string hint = "; pass --overwrite to replace it with untrained weights";
  for (const std::string& f : folds) {
    const fs::path ck = fs::path(output) / ("fold_" + f) / "checkpoint_final.ckpt";
    if (fs::exists(ck)) throw FileError(ck.string(), "already exists (a trained model?)" + hint);
  }
  // The other folds' checkpoints were trained with the folder's plans: keep them consistent.
  const fs::path plans_file = fs::path(output) / "plans.json", dataset_file = fs::path(output) / "dataset.json";
  const auto refuse = [&](const fs::path& file) {
    throw FileError(file.string(), "already exists with other content (the folder holds another model?)" + hint);
  };
  if (fs::exists(plans_file) && read_json(plans_file.string()) != plans) refuse(plans_file);
  // Compared in the file's order: region outputs follow the order of "labels".
  if (fs::exists(dataset_file) && read_ordered_json(dataset_file.string()) != dataset) refuse(dataset_file);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write a model folder with untrained weights (for benchmarks and smoke tests)", "medseg_init_model"};
  std::string dataset, configuration, plans_name = "nnUNetPlans", trainer = "nnUNetTrainer", output, preprocessed;
  std::vector<std::string> folds{"0"};
  uint64_t seed = 0;
  bool overwrite = false;
  std::string init = "training";
  app.add_option("-d,--dataset", dataset, "Dataset id or name (plans from MEDSEG_PREPROCESSED)")->required();
  app.add_option("-c,--configuration", configuration, "Configuration")->required();
  app.add_option("-p,--plans", plans_name, "Plans identifier")->capture_default_str();
  app.add_option("--tr", trainer, "Trainer name used in the folder name")->capture_default_str();
  app.add_option("-f,--folds", folds, "Folds to write (the same weights in each)")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the random initialisation")->capture_default_str();
  app.add_option("-o,--output", output, "Model folder (default: MEDSEG_RESULTS/DATASET/TR__PLANS__CONFIG)");
  app.add_option("--preprocessed", preprocessed, "Preprocessed root (default: $MEDSEG_PREPROCESSED)");
  app.add_option("--init", init,
                 "Weights: training (the initialisation medseg_train starts from: nnU-Net's He init for U-Nets) "
                 "or torch (LibTorch's module defaults, about 0.41x the He standard deviation)")
      ->check(CLI::IsMember({"training", "torch"}))
      ->capture_default_str();
  app.add_flag("--overwrite", overwrite, "Replace existing checkpoints (and differing plans.json/dataset.json)");
  return cli::run(argc, argv, app, [&] {
    check_path_component(plans_name, "plans name (-p)");
    check_path_component(configuration, "configuration (-c)");
    check_path_component(trainer, "trainer name (--tr)");
    for (std::string& f : folds) f = training::parse_fold(f);
    const std::string pre_root = root_folder(Root::Preprocessed, preprocessed);
    const std::string name = find_dataset_name(pre_root, dataset);
    const fs::path pre = fs::path(pre_root) / name;
    const json plans_json = read_json((pre / (plans_name + ".json")).string());
    const ordered_json dataset_json = read_ordered_json((pre / "dataset.json").string());
    const planning::Plans plans = planning::plans_from_json(plans_json, (pre / (plans_name + ".json")).string());
    const io::DatasetInfo info = io::dataset_info_from_json(dataset_json, (pre / "dataset.json").string());
    const auto& cfg = plans.configuration(configuration);
    if (output.empty())
      output =
          (fs::path(root_folder(Root::Results)) / name / (trainer + "__" + plans_name + "__" + configuration)).string();

    if (!overwrite) refuse_existing(output, folds, plans_json, dataset_json);

    torch::manual_seed(seed);
    const int64_t classes = io::network_outputs(info);
    planning::check_forward_fits(cfg.architecture, {}, 1, info.num_channels(), device_memory_limit("cpu"), plans.source,
                                 "configuration '" + configuration + "'");
    models::NetworkBuildOptions bo;
    bo.init_weights = init == "training";  // the network factory's own choice, as the trainer makes it
    auto net = models::build_network_from_plan(cfg.architecture, info.num_channels(), classes, bo);
    checkpoint::Checkpoint ck;
    ck.weights = checkpoint::module_weights(*net);
    ck.plans = plans_json;
    ck.dataset = dataset_json;
    std::vector<int> axes;
    for (int a = 0; a < cfg.dim(); ++a) axes.push_back(a);
    ck.extra = {{"configuration", configuration}, {"in_channels", info.num_channels()},
                {"num_classes", classes},         {"inference_allowed_mirroring_axes", axes},
                {"trainer_name", trainer},        {"untrained", true},
                {"initialisation", init}};
    fs::create_directories(output);
    write_json((fs::path(output) / "plans.json").string(), plans_json);
    write_ordered_json((fs::path(output) / "dataset.json").string(), dataset_json);
    for (const std::string& f : folds) {
      fs::create_directories(fs::path(output) / ("fold_" + f));
      checkpoint::save_checkpoint((fs::path(output) / ("fold_" + f) / "checkpoint_final.ckpt").string(), ck);
    }
    std::printf("%s: %s, %lld parameters, %s initialisation, fold(s) %s\n", output.c_str(), net->class_name().c_str(),
                static_cast<long long>(net->parameter_count()), init.c_str(), json(folds).dump().c_str());
    return 0;
  });
}
