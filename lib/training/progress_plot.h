#pragma once
// progress.png like nnU-Net's: three stacked panels drawn with cairo -
//   1. train/val loss (left axis) with pseudo Dice and its EMA (right axis),
//   2. epoch duration, 3. learning rate - against the epoch. Torch-free.
#include <string>
#include <vector>

#include "training/metrics_log.h"

namespace medseg::training {

struct PlotSize {
  int width = 1200;
  int panel_height = 500;  // image height = 3 * panel_height
};

// Writes the PNG atomically. An empty log gives empty axes. Throws FileError naming the file.
void write_progress_plot(const std::string& png_path, const std::vector<EpochMetrics>& log, PlotSize size = {});

// False in a build without cairo (MEDSEG_WITH_CAIRO=OFF): write_progress_plot then only warns once.
bool progress_plot_available();

}  // namespace medseg::training
