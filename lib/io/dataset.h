#pragma once
// nnU-Net v2 raw dataset layout: DatasetXXX_Name/{dataset.json, imagesTr/, labelsTr/, imagesTs/}.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ordered_json_io.h"

namespace medseg::io {

// The most labels (and regions) dataset.json may name: the values nnU-Net's int16 segmentations hold.
// Each one is a network output, so the bound also bounds the network's last layers.
constexpr size_t kMaxLabels = 32767;

struct LabelDef {
  std::string name;
  std::vector<int> values;  // one value for a plain label; several for a region
};

struct DatasetInfo {
  std::string folder;                      // path to DatasetXXX_Name
  std::string name;                        // "DatasetXXX_Name"
  std::vector<std::string> channel_names;  // by channel index ("CT", "T2", ...)
  std::vector<LabelDef> labels;            // in dataset.json's order, as nnU-Net's LabelManager keeps it
  int num_training = 0;
  std::string file_ending = ".nii.gz";
  ordered_json raw;  // the whole dataset.json, keys in the file's order
  // "overwrite_image_reader_writer": "NibabelIOWithReorient": volumes are read in canonical orientation.
  bool reorient_to_ras = false;

  int num_channels() const { return static_cast<int>(channel_names.size()); }
  // Every label value a label map may hold, sorted: background, plain labels, the integers of
  // region lists, and the ignore label ("ignore" in labels, or a top-level "ignore").
  std::vector<int> label_values() const;
  bool has_regions() const;
};

// The parts of dataset.json a network needs, for readers that do not need a whole raw dataset
// (medseg_model_info). Throw FileError naming `file` and the key. dataset.json is read with
// read_ordered_json: a region dataset's outputs follow the order of "labels" in the file, which a
// key-sorted `json` has lost, so the `json` overloads are deleted.
std::vector<std::string> channel_names_from_json(const ordered_json& dataset,
                                                 const std::string& file);  // legacy: modality
std::vector<LabelDef> labels_from_json(const ordered_json& dataset, const std::string& file);
std::vector<LabelDef> labels_from_json(const json& dataset, const std::string& file) = delete;

// Outputs (segmentation heads) a network for these labels has: one per label, background included,
// "ignore" excluded; for a region-based dataset one per region (background excluded).
int64_t network_outputs(const std::vector<LabelDef>& labels);
// The value of the ignore label (nnU-Net: the key "ignore" in labels), when the dataset has one:
// voxels holding it are unannotated and take no part in loss or metrics.
std::optional<int> ignore_label(const std::vector<LabelDef>& labels);
// nnU-Net's LabelManager.foreground_labels: every label value but background (0) and "ignore",
// region lists flattened, sorted. A cascade's previous stage adds one input channel per value.
std::vector<int> foreground_labels(const std::vector<LabelDef>& labels);
inline int64_t network_outputs(const DatasetInfo& dataset) { return network_outputs(dataset.labels); }
// A region-based dataset's regions, one per network output in label order (background and
// "ignore" left out); empty for a dataset of plain labels.
std::vector<std::vector<int>> foreground_regions(const std::vector<LabelDef>& labels);

// One case: its channel files in channel order, and its label file ("" when there is none).
struct CaseFiles {
  std::string id;
  std::vector<std::string> images;
  std::string label;
};

// Parses and validates dataset.json (channel_names or legacy modality, labels, numTraining,
// file_ending). Throws FileError naming the file and key.
DatasetInfo load_dataset_info(const std::string& dataset_folder);
// dataset.json's file_ending, checked as every name that becomes part of a path (outputs are named
// <case id><file_ending>): a string, a single file name (check_path_component), starting with '.'.
// `fallback` when the key is absent (copies of dataset.json in prediction and model folders). Throws
// FileError naming `file`.
std::string file_ending_from_json(const ordered_json& dataset, const std::string& file,
                                  const std::string& fallback = ".nii.gz");
// The same checks on an already-parsed dataset.json (e.g. the copy inside a checkpoint); `file`
// names its source in errors. folder and name stay empty.
DatasetInfo dataset_info_from_json(const ordered_json& j, const std::string& file);
DatasetInfo dataset_info_from_json(const json& j, const std::string& file) = delete;

// Training cases: from the explicit "dataset" mapping when dataset.json has one, otherwise by
// scanning imagesTr/ for CASE_XXXX<file_ending> and labelsTr/CASE<file_ending>. Sorted by id.
// Missing channel or label files are errors naming the file.
std::vector<CaseFiles> list_training_cases(const DatasetInfo& info);

// Cases in any folder of CASE_XXXX<ending> files (imagesTs/, prediction input). A file with no
// _XXXX suffix counts as channel 0 when `num_channels` is 1. Missing channels are errors.
std::vector<CaseFiles> list_image_cases(const std::string& folder, const std::string& file_ending, int num_channels);

// Problems a full integrity check finds (medseg_verify_dataset); empty when the dataset is fine.
std::vector<std::string> verify_dataset(const DatasetInfo& info, int threads = 1);

}  // namespace medseg::io
