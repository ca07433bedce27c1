#pragma once
// The overlay pictures (visualization/overlay.h) of medseg_predict --overlays and of the final
// validation, each written to <folder>/overlays/<case>.png beside the segmentations: a subfolder,
// so that the segmentation folder holds only what evaluation, ensembling and postprocessing read.
#include <string>

#include "core/volume.h"
#include "inference/export.h"
#include "io/dataset.h"
#include "preprocessing/case_store.h"

namespace medseg::inference {

std::string overlay_file(const std::string& folder, const std::string& id);

// Creates <folder>/overlays up front, so that a folder that cannot take them fails before any
// prediction (FileError naming it) rather than once per case; a build without cairo refuses here.
void create_overlay_folder(const std::string& folder);

// medseg_predict: the case's first channel, read again from `image_file` in its own geometry, under
// the segmentation that was written. Throws (the case is reported as failed).
void write_prediction_overlay(const std::string& image_file, const Volume& segmentation, const io::DatasetInfo& dataset,
                              const std::string& folder, const std::string& id);

// Final validation: the preprocessed first channel brought back to the original grid (the raw images
// may be gone, as for scoring), the segmentation and, in the second row, `reference_file`. A failure
// is logged as a warning: a picture never fails a training run. Nothing without cairo.
void write_validation_overlay(const preprocessing::PreprocessedCase& c, const Volume& segmentation,
                              const std::string& reference_file, const io::DatasetInfo& dataset,
                              const ExportOptions& opts, const std::string& folder);

}  // namespace medseg::inference
