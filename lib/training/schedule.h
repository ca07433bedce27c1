#pragma once
// nnU-Net's PolyLRScheduler: lr = initial * (1 - epoch / max_epochs)^exponent. Stateless: the
// learning rate is a function of the epoch, so resuming needs only the epoch number.
#include <cstdint>

namespace medseg::training {

// The learning-rate schedule after the warm-up: nnU-Net's PolyLRScheduler, or nnUNetTrainerCosAnneal's cosine.
enum class LrSchedule { Poly, Cosine };

// Throws Error for max_epochs <= 0 or an epoch outside [0, max_epochs].
double poly_lr(double initial_lr, int64_t epoch, int64_t max_epochs, double exponent = 0.9);

// nnUNetTrainerCosAnneal: torch's CosineAnnealingLR(T_max = max_epochs, eta_min = 0) stepped with the epoch,
// i.e. its closed form initial * (1 + cos(pi * epoch / max_epochs)) / 2. The same checks as poly_lr.
double cosine_lr(double initial_lr, int64_t epoch, int64_t max_epochs);

// The learning rate of `epoch` under a trainer config's schedule with
// `warmup_epochs` W of linear warm-up (nnUNetTrainer_warmup, W = 50): lr0 (1 + epoch) / W while
// epoch < W (nnU-Net's Lin_incr_LRScheduler), then the schedule over epoch - W of max_epochs - W
// (PolyLRScheduler_offset; the cosine likewise). W = 0 is poly_lr / cosine_lr. W >= max_epochs (a run
// cut short with --epochs) warms up for the whole run, as nnU-Net does. Throws Error for W < 0.
double scheduled_lr(LrSchedule schedule, double initial_lr, int64_t epoch, int64_t max_epochs, double exponent,
                    int64_t warmup_epochs);

}  // namespace medseg::training
