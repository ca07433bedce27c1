#pragma once
// medseg_predict writes CASE<ending> (and CASE_probabilities.npy/.json) into the output folder. An
// input without the _0000 suffix is named exactly like its case's output, so -o equal to -i would
// replace the user's images with segmentations. This check runs before anything is written.
#include <string>
#include <vector>

#include "inference/case_inputs.h"
#include "inference/predict_cases.h"

namespace medseg::inference {

// Throws FileError naming the input file when an output of `cases` (or one of `more_outputs`, e.g.
// the dataset.json copy) is the same file as any file of `inputs` — however the paths are spelled:
// ".", "..", trailing slashes, symbolic and hard links all resolve to the same file. Outputs in the
// input folder that do not collide are fine (as nnU-Net allows -o equal to -i).
void refuse_overwriting_inputs(const std::vector<CaseInput>& inputs, const std::vector<CaseInput>& cases,
                               const RunOptions& options, const std::vector<std::string>& more_outputs = {});

}  // namespace medseg::inference
