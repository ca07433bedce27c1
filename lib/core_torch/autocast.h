#pragma once
// RAII autocast scope (LibTorch has none): mirrors Python's torch.autocast __enter__/__exit__.
#include "core/amp.h"
#include "core/error.h"
#include "core/torch_compat.h"

namespace medseg {

struct AutocastSetting {
  bool enabled = false;
  c10::ScalarType dtype = c10::ScalarType::Float;
};

// What `mode` means on this device (Auto: fp16 on CUDA, off on the CPU). Throws medseg::Error for fp16
// without CUDA: CPU autocast has bf16 only.
inline AutocastSetting autocast_setting(AmpMode mode, bool cuda) {
  if (mode == AmpMode::Auto) mode = cuda ? AmpMode::Fp16 : AmpMode::Off;
  MEDSEG_CHECK(mode != AmpMode::Fp16 || cuda, "--amp fp16 needs CUDA; use --amp bf16 on the CPU");
  if (mode == AmpMode::Off) return {};
  return {true, mode == AmpMode::Fp16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16};
}

class AutocastGuard {
 public:
  AutocastGuard(bool cuda, bool enabled, c10::ScalarType dtype)
      : cuda_(cuda),
        prev_enabled_(compat::autocast_enabled(cuda)),
        prev_dtype_(compat::autocast_dtype(cuda)),
        active_(enabled) {
    if (!active_) return;
    compat::set_autocast(cuda_, true, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (!active_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    compat::set_autocast(cuda_, prev_enabled_, prev_dtype_);
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool cuda_, prev_enabled_;
  c10::ScalarType prev_dtype_;
  bool active_;
};

}  // namespace medseg
