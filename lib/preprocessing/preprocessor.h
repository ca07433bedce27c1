#pragma once
// nnU-Net's DefaultPreprocessor, per case and per dataset. Order of operations (run_case_npy):
//   1. transpose (plans.transpose_forward) of every array and of the spacing,
//   2. crop to nonzero (seg = -1 outside the filled nonzero mask),
//   3. normalize each channel (configuration.normalization_schemes / use_mask_for_norm),
//   4. resample data and seg to the configuration's spacing (2d: the first axis keeps its spacing),
//   5. sample class locations (cases with a label only).
// The result goes to the case store (case_store.h).
#include <optional>
#include <string>
#include <vector>

#include "io/case_loader.h"
#include "io/dataset.h"
#include "plans/plans.h"
#include "preprocessing/case_store.h"
#include "preprocessing/class_locations.h"
#include "preprocessing/normalization.h"
#include "preprocessing/resampling.h"
#include "preprocessing/transpose.h"

namespace medseg::preprocessing {

// Everything one configuration needs to preprocess a case, checked once.
struct PreprocessPlan {
  std::string plans_name;  // recorded in the data folder (data_record.h)
  std::string configuration;
  std::string data_identifier;
  Perm3 transpose_forward{0, 1, 2};
  std::vector<double> spacing;  // the configuration's: 3 values, or 2 for 2d (transposed order)
  std::vector<NormScheme> schemes;
  std::vector<bool> use_mask;
  std::vector<std::optional<IntensityProps>> intensity;  // per channel; set when CT needs it
  ResampleSpec data, seg;
  std::vector<SamplingClass> classes;
  std::vector<int> label_values;  // every value a label map may hold (io::DatasetInfo::label_values)
  bool reorient_to_ras = false;   // plans' image_reader_writer is NibabelIOWithReorient (io/reorient.h)
};

// A configuration's resampling function and kwargs (resampling_fn_data/_seg/_probabilities): nnU-Net's
// resample_data_or_seg_to_shape (or _to_spacing) or resample_torch_fornnunet; Error naming `source`
// for another function or a kwarg value medseg does not implement.
ResampleSpec resample_spec(const std::string& fn, const planning::ResamplingKwargs& kwargs, const std::string& source);

// Builds the plan for `configuration`; throws Error naming the plans file for an unknown
// configuration, a channel-count mismatch, an unknown normalization or resampling function, or
// missing intensity properties.
PreprocessPlan make_preprocess_plan(const planning::Plans& plans, const std::string& configuration,
                                    const io::DatasetInfo& dataset);

struct PreprocessedCaseData {
  CaseProperties properties;
  CaseArrays arrays;
};

// Runs steps 1-5 on one loaded case (taken by value so the caller can hand over its memory).
PreprocessedCaseData preprocess_case(io::LoadedCase loaded, const PreprocessPlan& plan);

struct PreprocessOptions {
  int threads = 1;  // cases in flight at once; each holds one case in memory
  bool progress = true;
};

// Preprocesses `cases` into `output_folder`, replacing what it held (as nnU-Net does) only once
// every case is written: on error the previous content stays and nothing new is left. Cases run
// on `threads` threads; errors name the case's files. A label value outside plan.label_values
// (when set) is an error naming the label file: training would fail on it, or, for a negative
// one, silently take it for "outside the image".
void preprocess_cases(const std::vector<io::CaseFiles>& cases, const PreprocessPlan& plan,
                      const std::string& output_folder, const PreprocessOptions& options);

// Copies every case's label file to `folder`/ID<file_ending> unless an up-to-date copy exists
// (nnU-Net's gt_segmentations/, used for validation when the raw data is gone).
void copy_gt_segmentations(const std::vector<io::CaseFiles>& cases, const std::string& file_ending,
                           const std::string& folder);

// nnU-Net's default worker counts: 8 for 2d, 4 for 3d_fullres, 8 for 3d_lowres, 4 otherwise.
int default_preprocess_threads(const std::string& configuration);

}  // namespace medseg::preprocessing
