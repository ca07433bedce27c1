// medseg-app: itk
// medseg_preprocess_like_nnssl: nnUNetv2_preprocess_like_nnssl (nnU-Net master) - plans for fine-tuning from an
// nnssl checkpoint, made from the dataset's plans (lib/planning/plans_like_nnssl.h), then its 3d_fullres
// preprocessed. Train with medseg_train D 3d_fullres F -p <the plans> --tr PretrainedTrainer (docs/finetuning.md).
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "planning/plans_like_nnssl.h"
#include "plans/plans.h"
#include "preprocessing/dataset_preprocessing.h"
#include "sharing/nnssl_checkpoint.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// The plans nnU-Net starts from: nnUNetPlans, else a ResEnc preset's, whichever exists first.
std::string base_plans_file(const fs::path& dataset_folder) {
  for (const char* name : {"nnUNetPlans", "nnUNetResEncUNetPlans", "nnUNetResEncUNetMPlans", "nnUNetResEncUNetLPlans",
                           "nnUNetResEncUNetXLPlans"})
    if (fs::is_regular_file(dataset_folder / (std::string(name) + ".json")))
      return (dataset_folder / (std::string(name) + ".json")).string();
  throw FileError(dataset_folder.string(),
                  "has none of nnUNetPlans.json and nnUNetResEncUNet{,M,L,XL}Plans.json: plan the dataset first "
                  "(medseg_plan_experiment)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Plans and preprocessing for fine-tuning from an nnssl checkpoint (nnUNetv2_preprocess_like_nnssl)",
               "medseg_preprocess_like_nnssl"};
  std::string id, mode = "default_nnunet";
  planning::PlansLikeNnssl o;
  int threads = 0;
  bool overwrite = false, no_progress = false;
  app.add_option("-d", id, "Dataset id or name under $MEDSEG_RAW")->required();
  app.add_option("-n,--pretraining_name", o.pretraining_name, "A unique name of the pretraining (names the plans)")
      ->required();
  app.add_option("--pc,--pretrained_checkpoint", o.checkpoint_path, "The nnssl checkpoint (.pth)")->required();
  app.add_option("--am,--adaptation_mode", mode,
                 "Spacing: like_pretrained (the pretraining's, recommended), default_nnunet (the plans'), fixed "
                 "(--os)")
      ->capture_default_str();
  app.add_option("--os,--override_spacing", o.fixed_spacing, "The spacing of -am fixed (three values, z y x)");
  app.add_option("--np", threads, "Cases in flight (default 4, capped by the cores)");
  app.add_flag("--overwrite_pp", overwrite, "Preprocess again when the data folder exists");
  app.add_flag("--no-progress", no_progress, "No progress bar");
  return cli::run(argc, argv, app, [&] {
    check_path_component(o.pretraining_name, "-n (the pretraining's name)");
    o.spacing = planning::parse_nnssl_spacing(mode);
    o.checkpoint_path = fs::absolute(o.checkpoint_path).lexically_normal().string();
    const std::string raw_root = root_folder(Root::Raw), pp_root = root_folder(Root::Preprocessed);
    const std::string name = find_dataset_name(raw_root, id);
    const fs::path dataset = fs::path(pp_root) / name;
    const std::string base = base_plans_file(dataset);
    const sharing::NnsslCheckpoint ck = sharing::read_nnssl_checkpoint(o.checkpoint_path);
    const ordered_json plans =
        planning::plans_like_nnssl(read_ordered_json(base), base, ck.adaptation_plan, ck.citations, o);
    const std::string plans_name = plans.at("plans_name").get<std::string>();
    const std::string out = (dataset / (plans_name + ".json")).string();
    (void)planning::plans_from_json(json(plans), out);  // refused here, before anything is written
    write_file_atomic(out, plans.dump(4));
    std::printf("%s -> %s\n", base.c_str(), out.c_str());
    const std::string data = plans.at("configurations").at("3d_fullres").at("data_identifier").get<std::string>();
    if (fs::is_directory(dataset / data) && !overwrite) {
      std::printf("%s exists: not preprocessed again (--overwrite_pp to redo it)\n", (dataset / data).c_str());
      return 0;
    }
    preprocessing::DatasetPreprocessRequest req;
    req.raw_dataset_folder = (fs::path(raw_root) / name).string();
    req.preprocessed_dataset_folder = dataset.string();
    req.plans_name = plans_name;
    req.configurations = {"3d_fullres"};
    if (threads > 0) req.threads = {threads};
    req.default_threads_cap = cli::default_threads();
    req.progress = !no_progress;
    for (const auto& r : preprocessing::preprocess_dataset(req))
      std::printf("%s %s: %d case(s) in %.1f s -> %s\n", name.c_str(), r.configuration.c_str(), r.cases, r.seconds,
                  r.output_folder.c_str());
    return 0;
  });
}
