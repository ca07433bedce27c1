// medseg_move_plans_between_datasets: nnUNetv2_move_plans_between_datasets - copies a dataset's plans
// to another dataset (its preprocessed folder), re-targeted at it (lib/planning/move_plans.h).
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/paths.h"
#include "planning/move_plans.h"
#include "planning/planner_inputs.h"

namespace fs = std::filesystem;
using medseg::planning::ordered_json;

int main(int argc, char** argv) {
  CLI::App app{"Copy a dataset's plans to another dataset, re-targeted at it (nnUNetv2_move_plans_between_datasets)",
               "medseg_move_plans_between_datasets"};
  std::string source, target, source_plans, target_plans;
  app.add_option("-s", source, "Source dataset name or id")->required();
  app.add_option("-t", target, "Target dataset name or id")->required();
  app.add_option("--sp", source_plans, "Source plans identifier (nnUNetPlans for nnUNetPlans.json)")->required();
  app.add_option("--tp", target_plans,
                 "Target plans identifier (default: the source's; better another one than nnU-Net's default names)");
  return medseg::cli::run(argc, argv, app, [&] {
    if (target_plans.empty()) target_plans = source_plans;
    for (const std::string* name : {&source_plans, &target_plans})
      if (name->find('/') != std::string::npos || name->find("..") != std::string::npos || name->empty())
        throw medseg::Error("plans identifier '" + *name + "' must be a plain file name stem");
    const std::string pre = medseg::root_folder(medseg::Root::Preprocessed);
    const std::string raw = medseg::root_folder(medseg::Root::Raw);
    const std::string source_name = medseg::find_dataset_name(pre, source);
    const std::string target_name = medseg::find_dataset_name(raw, target);
    const std::string source_file = (fs::path(pre) / source_name / (source_plans + ".json")).string();
    if (!fs::is_regular_file(source_file))
      throw medseg::FileError(source_file,
                              "source plans are missing (run the experiment planning for " + source_name + " first)");
    ordered_json plans = medseg::read_ordered_json(source_file);
    const auto dataset = medseg::planning::load_dataset_json((fs::path(raw) / target_name / "dataset.json").string());
    plans = medseg::planning::move_plans(std::move(plans), target_name, source_plans, target_plans, dataset);
    const fs::path out_dir = fs::path(pre) / target_name;
    fs::create_directories(out_dir);
    const std::string out = (out_dir / (target_plans + ".json")).string();
    medseg::write_file_atomic(out, plans.dump(4));
    std::printf("%s -> %s\n", source_file.c_str(), out.c_str());
    return 0;
  });
}
