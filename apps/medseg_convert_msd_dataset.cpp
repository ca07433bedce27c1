// medseg-app: itk
// medseg_convert_msd_dataset: nnUNetv2_convert_MSD_dataset - a Medical Segmentation Decathlon task
// folder as a raw dataset under MEDSEG_RAW (lib/io/dataset_conversion.h).
#include <cstdio>

#include "cli_common.h"
#include "core/paths.h"
#include "io/dataset_conversion.h"

int main(int argc, char** argv) {
  CLI::App app{
      "Convert a Medical Segmentation Decathlon task (TaskXX_Name) into a raw dataset DatasetXXX_Name "
      "(nnUNetv2_convert_MSD_dataset)",
      "medseg_convert_msd_dataset"};
  medseg::io::MsdConversion c;
  int id = -1;
  c.threads = medseg::cli::default_threads();
  app.add_option("-i", c.source, "The downloaded and extracted MSD task folder, e.g. Task05_Prostate")->required();
  auto* overwrite = app.add_option("--overwrite_id", id, "Dataset id to use instead of the task's number");
  app.add_option("--np", c.threads, "Threads")->capture_default_str();
  return medseg::cli::run(argc, argv, app, [&] {
    if (overwrite->count() > 0) c.target_id = id;
    c.raw_root = medseg::root_folder(medseg::Root::Raw);
    std::printf("%s\n", medseg::io::convert_msd_dataset(c).c_str());
    return 0;
  });
}
