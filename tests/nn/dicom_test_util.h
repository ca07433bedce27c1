#pragma once
// Shared by the DICOM prediction tests (inference_dicom_*_itk_test.cpp): an oblique CT-like series and a
// tiny three-label model that predicts something on it.
#include <cmath>
#include <string>

#include "inference_test_util.h"
#include "support/dicom_twin.h"
#include "support/dicom_writer.h"
#include "support/test_support.h"

namespace medseg::test {

// 17 slices of 18 x 16, tilted 25 degrees about y, 1.1 x 0.9 mm pixels 1.3 mm apart, a brighter block
// in the middle; rescaled by 0.5 and -100.
inline DicomSeriesSpec ct_series() {
  DicomSeriesSpec s;
  s.rows = 18;
  s.columns = 16;
  s.slices = 17;
  const double a = 25 * M_PI / 180;
  s.orientation = {std::cos(a), 0, -std::sin(a), 0, 1, 0};
  s.pixel_spacing = {1.1, 0.9};
  s.slice_step = 1.3;
  s.slope = 0.5;
  s.intercept = -100;
  s.raw = [](int k, int r, int c) {
    return 40 * ((k * 7 + r * 3 + c * 5) % 11) + (r > 6 && r < 12 && c > 5 ? 300 : 0);
  };
  return s;
}

// A model folder d/model with labels background, a, b (random weights, seed 17).
inline std::string dicom_tiny_model(const TempDir& d) {
  TinyModelSpec spec;
  spec.labels = {"background", "a", "b"};
  auto net = tiny_network(spec, 17);
  const std::string folder = d / "model";
  write_model_folder(folder, spec, net, {"0"});
  return folder;
}

}  // namespace medseg::test
