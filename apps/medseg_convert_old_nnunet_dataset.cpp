// medseg_convert_old_nnunet_dataset: nnUNetv2_convert_old_nnUNet_dataset - an nnU-Net v1 task folder
// (TaskXXX_Name, with imagesTr, labelsTr, ...) copied into MEDSEG_RAW as DatasetXXX_Name with a v2
// dataset.json (lib/io/dataset_conversion.h). Torch- and ITK-free: the images are copied as they are.
#include <cstdio>

#include "cli_common.h"
#include "core/paths.h"
#include "io/dataset_conversion.h"

int main(int argc, char** argv) {
  CLI::App app{"Convert an nnU-Net v1 raw task into an nnU-Net v2 raw dataset (nnUNetv2_convert_old_nnUNet_dataset)",
               "medseg_convert_old_nnunet_dataset"};
  std::string input, name;
  app.add_option("input_folder", input, "The v1 task folder (with imagesTr, labelsTr, dataset.json)")->required();
  app.add_option("output_dataset_name", name, "The new dataset's name, DatasetXXX_Name (not a path)")->required();
  return medseg::cli::run(argc, argv, app, [&] {
    const std::string raw = medseg::root_folder(medseg::Root::Raw);
    std::printf("%s\n", medseg::io::convert_old_nnunet_dataset(input, raw, name).c_str());
    return 0;
  });
}
