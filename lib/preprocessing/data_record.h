#pragma once
// What a preprocessed data folder (MEDSEG_PREPROCESSED/DatasetXXX/<data_identifier>/) was made with,
// in medseg_preprocessing.json beside its cases: the plans, the configuration, the target spacing,
// the transpose and the normalization. Plans that share a data_identifier (the ResEnc presets use
// nnUNetPlans_3d_fullres) share the folder; preprocessing another plans into it with a different
// spacing or normalization would change the data under the first plans' trained models, and is
// refused. The same plans may always rewrite its own folder (after re-planning).
#include <string>

#include "core/json_io.h"
#include "preprocessing/preprocessor.h"

namespace medseg::preprocessing {

inline constexpr char kDataRecordName[] = "medseg_preprocessing.json";

json data_record(const PreprocessPlan& plan);

// Throws FileError naming `folder`, the plans that made it and what differs, when `folder` holds a
// record of another plans whose spacing, transpose or normalization differ from `plan`'s. A folder
// without a record (written by nnU-Net, or by an older medseg) is not checked.
void check_data_record(const std::string& folder, const PreprocessPlan& plan);

}  // namespace medseg::preprocessing
