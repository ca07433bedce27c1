#pragma once
// nnU-Net's postprocessing: a list of "keep the largest connected component" steps, each over a
// set of label values (all foreground labels at once, or one label or region). Voxels of those
// values outside the largest component become background. Stored as postprocessing.json
// (docs/postprocessing.md), with nnU-Net's keys so either tool's users can read it.
#include <string>
#include <vector>

#include "core/json_io.h"
#include "core/volume.h"
#include "io/dataset.h"

namespace medseg::postprocessing {

struct KeepLargestComponent {
  std::vector<int> values;  // the mask is "segmentation holds one of these values"
};

struct Postprocessing {
  std::string file_ending = ".nii.gz";
  std::vector<KeepLargestComponent> steps;  // applied in order
  json before, after;                       // {"foreground_mean", "mean"} of the cross-validation
};

// Applies every step to an integer-valued segmentation (same pixel type and geometry out).
// Throws Error for a floating-point volume.
Volume apply_postprocessing(const Volume& segmentation, const std::vector<KeepLargestComponent>& steps);

json to_json(const Postprocessing& pp);
// Throws FileError naming `source` for a file that is not a postprocessing.json: also for a label
// out of int range (never wrapped) or a labels_or_regions nested deeper than a list of regions.
Postprocessing postprocessing_from_json(const json& j, const std::string& source);
// Throws FileError naming `source` and the step when a step keeps a value that is not one of the
// dataset's foreground labels (io::foreground_labels: plain labels and the values of regions).
void check_declared_labels(const Postprocessing& pp, const std::vector<io::LabelDef>& labels,
                           const std::string& source);
// postprocessing_from_json of the file, then check_declared_labels against the dataset.json `labels`.
Postprocessing read_postprocessing(const std::string& path, const std::vector<io::LabelDef>& labels);
void write_postprocessing(const std::string& path, const Postprocessing& pp);

// Reads every `file_ending` segmentation of `input_folder`, applies `pp` and writes it under the
// same name into `output_folder` (created; must not be the input folder: predictions are never
// overwritten), with the input's dataset.json and plans.json. Returns the number of files written.
// On failure an output folder that this call created is removed again.
int64_t apply_postprocessing_to_folder(const std::string& input_folder, const std::string& output_folder,
                                       const Postprocessing& pp, int threads);

}  // namespace medseg::postprocessing
