#pragma once
// nnUNetv2_move_plans_between_datasets: plans made for one dataset, re-targeted at another so that
// both are preprocessed and trained the same way (transfer learning, or a test set planned like the
// training set). The plans are nnU-Net's, changed where nnU-Net changes them.
#include <string>

#include "planning/planner.h"
#include "planning/planner_inputs.h"

namespace medseg::planning {

// The source plans with: dataset_name = target_dataset_name; plans_name = target_plans_name; each
// configuration's data_identifier renamed when the plans name changes ("<source name>_X" becomes
// "<target name>_X", any other identifier gets "<target name>_" in front, as nnU-Net does);
// image_reader_writer chosen for the target's dataset.json. Key order is kept.
ordered_json move_plans(ordered_json plans, const std::string& target_dataset_name,
                        const std::string& source_plans_name, const std::string& target_plans_name,
                        const DatasetJsonInput& target_dataset);

}  // namespace medseg::planning
