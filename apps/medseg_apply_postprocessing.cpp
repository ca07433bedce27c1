// medseg-app: itk
// medseg_apply_postprocessing: applies a postprocessing.json (medseg_determine_postprocessing, or
// nnU-Net's postprocessing.json) to a folder of segmentations (docs/postprocessing.md).
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "io/dataset.h"
#include "io/image_folder.h"
#include "postprocessing/postprocessing.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App app{"Apply postprocessing to a folder of segmentations", "medseg_apply_postprocessing"};
  std::string input, output, pp_file, djfile;
  int threads = medseg::cli::default_threads();
  app.add_option("-i,--input", input, "Folder of segmentations")->required();
  app.add_option("-o,--output", output, "Output folder (not the input folder)")->required();
  app.add_option("--pp_json", pp_file, "postprocessing.json (default: INPUT/postprocessing.json)");
  app.add_option("--dataset_json", djfile,
                 "dataset.json whose labels the steps must keep (default: INPUT/dataset.json, as nnU-Net)");
  app.add_option("--np", threads, "Threads")->capture_default_str();
  return medseg::cli::run(argc, argv, app, [&] {
    if (pp_file.empty()) pp_file = (fs::path(input) / "postprocessing.json").string();
    if (djfile.empty()) djfile = (fs::path(input) / "dataset.json").string();
    const auto labels = medseg::io::labels_from_json(medseg::read_ordered_json(djfile), djfile);
    const auto pp = medseg::postprocessing::read_postprocessing(pp_file, labels);
    const int64_t n = medseg::postprocessing::apply_postprocessing_to_folder(input, output, pp, threads);
    std::printf("%lld segmentation(s) postprocessed (%zu step(s)) -> %s\n", static_cast<long long>(n), pp.steps.size(),
                output.c_str());
    return 0;
  });
}
