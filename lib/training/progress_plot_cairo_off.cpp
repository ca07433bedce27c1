// A build without cairo (MEDSEG_WITH_CAIRO=OFF) trains without progress.png: the metrics stay in
// metrics.jsonl, and one warning per process says why the picture is missing.
#include <mutex>

#include <spdlog/spdlog.h>

#include "training/progress_plot.h"

namespace medseg::training {

bool progress_plot_available() { return false; }

void write_progress_plot(const std::string& png_path, const std::vector<EpochMetrics>&, PlotSize) {
  static std::once_flag warned;
  std::call_once(warned, [&] {
    spdlog::warn("no {}: this build of medseg has no cairo (MEDSEG_WITH_CAIRO=OFF); the metrics are in metrics.jsonl",
                 png_path);
  });
}

}  // namespace medseg::training
