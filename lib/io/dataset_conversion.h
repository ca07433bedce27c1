#pragma once
// Datasets in the layouts that came before nnU-Net v2, converted into its raw layout, as nnU-Net's
// dataset_conversion does.
//
// nnUNetv2_convert_MSD_dataset: a Medical Segmentation Decathlon task folder (TaskXX_Name with
// imagesTr, imagesTs, labelsTr and MSD's dataset.json) as a raw dataset DatasetXXX_Name. MSD stores
// the modalities of a case as the 4th axis of one NIfTI file; nnU-Net wants one file per channel
// (CASE_0000.nii.gz, CASE_0001.nii.gz, ...), each with the 3D part of the geometry.
#include <optional>
#include <string>

namespace medseg::io {

struct MsdConversion {
  std::string source;            // the TaskXX_Name folder
  std::string raw_root;          // where DatasetXXX_Name is made
  std::optional<int> target_id;  // default: XX of the task's name
  int threads = 1;
};

// Returns the dataset folder made. dataset.json: "labels" inverted to {name: value} in the file's
// order, "modality" renamed "channel_names", "file_ending" ".nii.gz", "training"/"test" dropped,
// every other key kept. Files whose name starts with '.' or '_' (macOS's "._" copies) are skipped.
// Throws FileError naming the file or folder for: a name that is not TaskXX_Name, a missing folder
// or dataset.json, an id another dataset under raw_root has, a target that exists, an image whose
// number of volumes is not the number of modalities, any unreadable image. The dataset is built
// aside and moved into place only when complete: a failure or an interruption leaves nothing.
std::string convert_msd_dataset(const MsdConversion& c);

// nnUNetv2_convert_old_nnUNet_dataset: an nnU-Net v1 task folder (images already one file per channel)
// copied to raw_root/target_name (DatasetXXX_Name): imagesTr and labelsTr, and imagesTs, labelsTs,
// imagesVal, labelsVal where present; dataset.json converted as for MSD, with "tensorImageSize" and
// "numTest" dropped too. Throws FileError naming the folder or file for: a target name that is not
// DatasetXXX_Name, a target that exists or whose id another dataset has, a missing imagesTr, labelsTr
// or dataset.json. Built aside like convert_msd_dataset. Returns the dataset folder made.
std::string convert_old_nnunet_dataset(const std::string& source, const std::string& raw_root,
                                       const std::string& target_name);

}  // namespace medseg::io
