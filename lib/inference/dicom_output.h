#pragma once
// What a DICOM SEG or RTSTRUCT of a model's prediction says about itself (docs/dicom.md, "DICOM SEG output"): one
// segment per foreground label or region, named as dataset.json names it, with the concept codes and
// colour of the model folder's dicom_codes.json when it has one, generic ones otherwise.
#include <string>
#include <vector>

#include "inference/export.h"
#include "inference/model_folder.h"
#include "io/dicom_seg.h"

namespace medseg::inference {

// --output_format: "auto" (a DICOM series' case gets a SEG, the others file_ending), "nifti" (file_ending
// for every case), "dicom_seg" or "rtstruct" (that object for every case; a case that is not a series
// fails). Error otherwise.
void check_output_format(const std::string& format);

// The segments and algorithm description of `model`'s SEG. `version`: medseg's version. Throws FileError
// naming dicom_codes.json for a malformed file or a label it names that the model does not have.
io::DicomSegInfo dicom_seg_info(const ModelFolder& model, const LabelMapping& labels, const std::string& version);

}  // namespace medseg::inference
