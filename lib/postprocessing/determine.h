#pragma once
// nnU-Net's rule for choosing postprocessing from cross-validation predictions
// (determine_postprocessing):
//   1. keep only the largest connected component of the whole foreground (all labels at once); keep
//      this step if the mean foreground Dice rises and no label's mean Dice falls;
//   2. with more than one label (or region), for each in dataset.json order, on top of what was kept:
//      keep only its largest component; keep this step if that label's mean Dice rises.
// Steps are scored in memory (no temporary folders); the chosen postprocessing is written as
// PREDICTIONS/postprocessing.json and, unless told otherwise, the postprocessed segmentations with their
// summary.json into PREDICTIONS/postprocessed/.
#include <string>

#include "evaluation/evaluate_folder.h"
#include "postprocessing/postprocessing.h"

namespace medseg::postprocessing {

struct DetermineOptions {
  std::string predictions;                 // folder of segmentations (e.g. cross-validation results)
  std::string references;                  // folder of reference segmentations (gt_segmentations)
  evaluation::EvaluateOptions evaluation;  // labels, ignore label, file ending, threads
  bool keep_postprocessed = true;          // write PREDICTIONS/postprocessed/
  // The summary of PREDICTIONS against REFERENCES with these options (evaluate_folder, chill), when
  // the caller has it already; null: computed here.
  json baseline;
};

Postprocessing determine_postprocessing(const DetermineOptions& o);

}  // namespace medseg::postprocessing
