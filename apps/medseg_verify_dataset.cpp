// medseg-app: itk
// medseg_verify_dataset: integrity check of a raw dataset; prints every problem found.
#include <cstdio>

#include "cli_common.h"
#include "core/error.h"
#include "core/log.h"
#include "core/paths.h"
#include "io/dataset.h"

int main(int argc, char** argv) {
  CLI::App app{
      "Check a raw dataset (nnU-Net layout) for missing/extra files, grid mismatches, NaN and undeclared labels",
      "medseg_verify_dataset"};
  std::string id, raw, folder;
  int threads = medseg::cli::default_threads();
  app.add_option("-d", id, "Dataset id or name under $MEDSEG_RAW");
  app.add_option("--raw", raw, "Raw root folder (default: $MEDSEG_RAW)");
  app.add_option("-i,--folder", folder, "Dataset folder (instead of -d)");
  app.add_option("--np", threads, "Threads")->capture_default_str();
  return medseg::cli::run(argc, argv, app, [&] {
    if (folder.empty()) {
      if (id.empty()) throw medseg::Error("give -d DATASET or -i FOLDER");
      const std::string root = medseg::root_folder(medseg::Root::Raw, raw);
      folder = root + "/" + medseg::find_dataset_name(root, id);
    }
    const auto info = medseg::io::load_dataset_info(folder);
    const auto problems = medseg::io::verify_dataset(info, threads);
    for (const auto& p : problems) std::printf("problem: %s\n", p.c_str());
    if (!problems.empty()) {
      std::fprintf(stderr, "medseg_verify_dataset: %zu problem(s) in %s\n", problems.size(), folder.c_str());
      return 1;
    }
    std::printf("%s: OK (%d cases, %d channel(s), %zu labels)\n", info.name.c_str(), info.num_training,
                info.num_channels(), info.labels.size());
    return 0;
  });
}
