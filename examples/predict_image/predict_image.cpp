// Segments one image file with a trained medseg (or imported nnU-Net) model folder through medseg's
// embedding API, as a viewer or pipeline would, and writes the segmentation:
//
//   predict_image MODEL_FOLDER OUTPUT.nii.gz CHANNEL_0000.nii.gz [CHANNEL_0001.nii.gz ...] [--fold F]...
//
// The segmentation is the one `medseg_predict -m MODEL_FOLDER` writes for the same case.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "api/segmenter.h"
#include "io/image_io.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc), channels;
  medseg::api::SegmenterOptions options;
  for (size_t i = 2; i < args.size(); ++i) {
    if (args[i] == "--fold" && i + 1 < args.size())
      options.folds.push_back(args[++i]);
    else
      channels.push_back(args[i]);
  }
  if (args.size() < 3 || channels.empty()) {
    std::fprintf(stderr, "usage: predict_image MODEL_FOLDER OUTPUT CHANNEL_0000 [CHANNEL_0001 ...] [--fold F]...\n");
    return 2;
  }
  try {
    medseg::api::Segmenter model(args[0], options);
    std::vector<medseg::Volume> image;
    for (const auto& path : channels) image.push_back(medseg::io::read_image(path));
    int shown = -1;
    medseg::api::SegmentOptions so;  // the labels only (so.probabilities = false)
    so.progress = [&](double fraction) {
      const int percent = static_cast<int>(fraction * 100);
      if (percent / 10 != shown / 10) std::fprintf(stderr, "\rpredicting: %3d %%", percent);
      shown = percent;
      return true;
    };
    const medseg::api::Segmentation s = model.segment(image, so);
    std::fprintf(stderr, "\n");
    medseg::io::write_image(args[1], s.labels);
    std::printf("wrote %s\n", args[1].c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "predict_image: %s\n", e.what());
    return 1;
  }
  return 0;
}
