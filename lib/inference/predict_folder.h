#pragma once
// What `medseg_predict -i INPUT -o OUTPUT -m MODEL_FOLDER` does with the files (nnUNetv2_predict's
// predict_from_files): the cases of the input folder or files, this process's part of them, a cascade stage's
// previous-stage predictions, the copies of dataset.json and plans.json beside the outputs, the model folder's
// postprocessing, and the prediction of every case (predict_cases.h); for a cascade stage without
// previous-stage predictions, the previous stage's model first (predict_cascade).
#include <optional>
#include <string>
#include <vector>

#include "distributed/world.h"
#include "inference/model_folder.h"
#include "inference/predict_cases.h"
#include "inference/predictor.h"
#include "postprocessing/postprocessing.h"

namespace medseg::inference {

// The steps of the model folder's postprocessing.json (medseg_determine_postprocessing -m), read against its
// dataset.json's labels; nullopt when the folder has no such file.
std::optional<std::vector<postprocessing::KeepLargestComponent>> folder_postprocessing(const std::string& model_folder,
                                                                                       const ModelFolder& model);

// The model folder of `configuration` beside `folder` (<Trainer>__<Plans>__<Configuration>): same trainer and
// plans. "" when the folder is not named that way.
std::string sibling_model_folder(const std::string& folder, const std::string& configuration);

struct FolderRun {
  std::vector<std::string> inputs;  // a folder, or image files
  std::string output;               // the output folder
  std::string prev_stage;           // a cascade stage: the folder of the previous stage's predictions
  bool postprocessing = true;       // apply the model folder's postprocessing.json
  int num_parts = 1, part_id = 0;   // this process predicts cases i with i % num_parts == part_id
};

// One model over `run.inputs` into `run.output`. With several ranks (po.group), every rank predicts every case
// together; the summary is rank 0's (the others get nullopt).
std::optional<RunSummary> predict_folder(ModelFolder model, const std::string& model_folder, const FolderRun& run,
                                         const distributed::World& world, const PredictorOptions& po, RunOptions ro);

}  // namespace medseg::inference
