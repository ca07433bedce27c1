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

}  // namespace medseg::training
