#pragma once
// Zipped DICOM cases (docs/dicom.md): a case whose input is one .zip of a case folder is extracted
// (io/dicom_zip.h) into a scratch folder that this object removes when it goes, and on SIGINT/SIGTERM;
// the case then reads the extracted series folder, or its channel folders 0000, 0001, .... The zip stays
// among the case's input files, so no output may replace it.
#include <string>
#include <vector>

#include "core/signal_cleanup.h"
#include "inference/case_inputs.h"

namespace medseg::inference {

class ZippedCases {
 public:
  ZippedCases() = default;
  ~ZippedCases();
  ZippedCases(const ZippedCases&) = delete;
  ZippedCases& operator=(const ZippedCases&) = delete;

  // Extracts every zipped case of `cases` that has no error; a zip that cannot be extracted, or whose
  // channels do not match the model's `num_channels`, becomes that case's error.
  void expand(std::vector<CaseInput>& cases, int num_channels);

 private:
  std::string root_;  // made on the first zip
  RemoveOnSignal guard_;
};

}  // namespace medseg::inference
