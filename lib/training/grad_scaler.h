#pragma once
// Dynamic loss scaling for mixed-precision training (LibTorch has no GradScaler), with
// PyTorch's semantics: scale starts at 2^16, doubles after 2000 consecutive finite steps and
// halves (and the step is skipped) whenever a gradient is inf/NaN. Disabled = passthrough.
// CUDA tensors use the fused ATen AMP ops; CPU tensors use plain tensor ops with the same result.
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <torch/optim/optimizer.h>

#include <map>
#include <vector>

namespace medseg::training {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions opts = {});

  bool enabled() const { return opts_.enabled; }
  double scale_value() const;  // current scale (1.0 when disabled)
  int64_t growth_tracker() const;

  // loss * scale (the loss itself when disabled).
  at::Tensor scale(const at::Tensor& loss);

  // Divides the gradients by the scale in place and records whether any is inf/NaN. Call before
  // clipping; at most once per optimizer between updates. Returns true if all were finite.
  bool unscale(torch::optim::Optimizer& opt);
  bool unscale(const std::vector<at::Tensor>& params);

  // Unscales if not done yet, then steps unless a gradient was inf/NaN. Returns whether it stepped.
  bool step(torch::optim::Optimizer& opt);

  // Adjusts the scale from this iteration's inf/NaN findings; call once per iteration.
  void update();

  // {"enabled", "scale", "growth_tracker", "growth_factor", "backoff_factor", "growth_interval"}
  nlohmann::json state() const;
  void load_state(const nlohmann::json& j);

 private:
  at::Tensor unscale_grads(const std::vector<at::Tensor>& grads);  // returns found_inf (float, 1 elem)
  void ensure_device(const c10::Device& d);

  GradScalerOptions opts_;
  at::Tensor scale_;                             // float32 [1]
  at::Tensor growth_tracker_;                    // int32 [1]
  std::map<const void*, at::Tensor> found_inf_;  // per optimizer (or param list) since last update
};

}  // namespace medseg::training
