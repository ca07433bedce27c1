#pragma once
// Prediction inputs: folders of CASE_XXXX<ending> files and/or explicit files, grouped into cases.
// Unlike io::list_image_cases, a case with a missing or surplus channel does not stop the listing:
// it is returned with an error so that the other cases still run.
#include <string>
#include <vector>

namespace medseg::inference {

struct CaseInput {
  std::string id;
  std::vector<std::string> images;  // channel order (complete only when error is empty)
  std::string error;                // why this case cannot be predicted ("" = fine)
  std::vector<std::string> files;   // every input file of this case, also when error is set
  std::string previous_stage;       // cascade: the previous stage's segmentation of the case
};

// `inputs`: folders (every file ending in `file_ending` is taken) and files. A file without the
// _XXXX channel suffix is channel 0 of a single-channel model. Sorted by case id. Throws Error only
// when an input does not exist or nothing was found.
std::vector<CaseInput> collect_case_inputs(const std::vector<std::string>& inputs, const std::string& file_ending,
                                           int num_channels);

// A cascade stage's inputs (nnU-Net's -prev_stage_predictions): each case's `folder`/ID<file_ending>.
// A case without one gets an error (the others still run); the file joins the case's input files,
// so no output may overwrite it.
void attach_previous_stage(std::vector<CaseInput>& cases, const std::string& folder, const std::string& file_ending);

// nnU-Net's -num_parts/-part_id: of the sorted case list, the cases i with i % num_parts == part_id
// (Python's cases[part_id::num_parts]), so N processes with part ids 0..N-1 share the work without
// overlap. Throws Error unless num_parts >= 1 and 0 <= part_id < num_parts (check_part).
void check_part(int num_parts, int part_id);
std::vector<CaseInput> select_part(const std::vector<CaseInput>& cases, int num_parts, int part_id);

}  // namespace medseg::inference
