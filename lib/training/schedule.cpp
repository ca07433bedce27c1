#include "training/schedule.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace medseg::training {

double poly_lr(double initial_lr, int64_t epoch, int64_t max_epochs, double exponent) {
  MEDSEG_CHECK(max_epochs > 0, "poly_lr: max_epochs must be positive, got ", max_epochs);
  MEDSEG_CHECK(epoch >= 0 && epoch <= max_epochs, "poly_lr: epoch ", epoch, " is outside [0, ", max_epochs, "]");
  return initial_lr * std::pow(1.0 - static_cast<double>(epoch) / static_cast<double>(max_epochs), exponent);
}

double cosine_lr(double initial_lr, int64_t epoch, int64_t max_epochs) {
  MEDSEG_CHECK(max_epochs > 0, "cosine_lr: max_epochs must be positive, got ", max_epochs);
  MEDSEG_CHECK(epoch >= 0 && epoch <= max_epochs, "cosine_lr: epoch ", epoch, " is outside [0, ", max_epochs, "]");
  const double pi = std::acos(-1.0);
  return initial_lr * (1.0 + std::cos(pi * static_cast<double>(epoch) / static_cast<double>(max_epochs))) / 2.0;
}

double scheduled_lr(LrSchedule schedule, double initial_lr, int64_t epoch, int64_t max_epochs, double exponent,
                    int64_t warmup_epochs) {
  // A warm-up that outlasts the run (--epochs below it) keeps rising to the end, as nnU-Net's
  // Lin_incr_LRScheduler does; the schedule after it is then never reached.
  MEDSEG_CHECK(warmup_epochs >= 0, "warmup_epochs (", warmup_epochs, ") must be at least 0");
  MEDSEG_CHECK(epoch >= 0, "scheduled_lr: epoch ", epoch, " is negative");
  if (epoch < warmup_epochs) return initial_lr / static_cast<double>(warmup_epochs) * static_cast<double>(1 + epoch);
  const int64_t e = epoch - warmup_epochs, n = max_epochs - warmup_epochs;
  return schedule == LrSchedule::Cosine ? cosine_lr(initial_lr, e, n) : poly_lr(initial_lr, e, n, exponent);
}

}  // namespace medseg::training
