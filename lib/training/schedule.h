#pragma once
// nnU-Net's PolyLRScheduler: lr = initial * (1 - epoch / max_epochs)^exponent. Stateless: the
// learning rate is a function of the epoch, so resuming needs only the epoch number.
#include <cstdint>

namespace medseg::training {

// Throws Error for max_epochs <= 0 or an epoch outside [0, max_epochs].
double poly_lr(double initial_lr, int64_t epoch, int64_t max_epochs, double exponent = 0.9);

// nnUNetTrainerCosAnneal: torch's CosineAnnealingLR(T_max = max_epochs, eta_min = 0) stepped with the epoch,
// i.e. its closed form initial * (1 + cos(pi * epoch / max_epochs)) / 2. The same checks as poly_lr.
double cosine_lr(double initial_lr, int64_t epoch, int64_t max_epochs);

}  // namespace medseg::training
