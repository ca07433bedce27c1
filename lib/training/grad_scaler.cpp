#include "training/grad_scaler.h"

#include <ATen/ATen.h>

#include "core/error.h"

namespace medseg::training {

GradScaler::GradScaler(GradScalerOptions opts) : opts_(opts) {
  MEDSEG_CHECK(!(opts_.growth_factor <= 1.0 || opts_.backoff_factor >= 1.0 || opts_.backoff_factor <= 0.0 ||
                 opts_.growth_interval <= 0),
               "GradScaler: need growth_factor > 1, 0 < backoff_factor < 1, growth_interval > 0");
  scale_ = at::full({1}, opts_.init_scale, at::kFloat);
  growth_tracker_ = at::zeros({1}, at::kInt);
}

double GradScaler::scale_value() const { return opts_.enabled ? scale_.item<double>() : 1.0; }
int64_t GradScaler::growth_tracker() const { return growth_tracker_.item<int64_t>(); }

void GradScaler::ensure_device(const c10::Device& d) {
  if (scale_.device() != d) {
    scale_ = scale_.to(d);
    growth_tracker_ = growth_tracker_.to(d);
  }
}

at::Tensor GradScaler::scale(const at::Tensor& loss) {
  if (!opts_.enabled) return loss;
  ensure_device(loss.device());
  // float32 scale: an fp16 loss is promoted, since 2^16 itself overflows fp16.
  return loss * scale_;
}

at::Tensor GradScaler::unscale_grads(const std::vector<at::Tensor>& grads) {
  at::Tensor found = at::zeros({1}, scale_.options());
  if (grads.empty()) return found;
  // Reciprocal in double like PyTorch, so the unscaled grads are exact for power-of-two scales.
  const at::Tensor inv = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  std::vector<at::Tensor> cuda;
  for (const auto& g : grads) {
    if (g.is_cuda()) {
      cuda.push_back(g);
      continue;
    }
    if (!at::isfinite(g).all().item<bool>()) found.fill_(1.0);
    g.mul_(inv.to(g.device()).to(g.scalar_type()));
  }
  if (!cuda.empty()) {
    // The fused op groups nothing by device/dtype itself: one call per (device, dtype).
    std::map<std::pair<std::string, c10::ScalarType>, std::vector<at::Tensor>> groups;
    for (const auto& g : cuda) groups[{g.device().str(), g.scalar_type()}].push_back(g);
    for (auto& [key, list] : groups) {
      const auto dev = list.front().device();
      at::Tensor f = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(dev));
      at::_amp_foreach_non_finite_check_and_unscale_(list, f, inv.to(dev));
      found.add_(f.to(found.device()));
    }
    found.clamp_max_(1.0);
  }
  return found;
}

bool GradScaler::unscale(const std::vector<at::Tensor>& params) {
  if (!opts_.enabled) return true;
  const void* key = params.empty() ? nullptr : params.front().unsafeGetTensorImpl();
  MEDSEG_CHECK(!found_inf_.count(key), "GradScaler: unscale() called twice before update()");
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  at::Tensor found = unscale_grads(grads);
  found_inf_[key] = found;
  return found.item<double>() == 0.0;
}

bool GradScaler::unscale(torch::optim::Optimizer& opt) {
  if (!opts_.enabled) return true;
  std::vector<at::Tensor> params;
  for (const auto& g : opt.param_groups())
    for (const auto& p : g.params()) params.push_back(p);
  return unscale(params);
}

bool GradScaler::step(torch::optim::Optimizer& opt) {
  if (!opts_.enabled) {
    opt.step();
    return true;
  }
  std::vector<at::Tensor> params;
  for (const auto& g : opt.param_groups())
    for (const auto& p : g.params()) params.push_back(p);
  const void* key = params.empty() ? nullptr : params.front().unsafeGetTensorImpl();
  if (!found_inf_.count(key)) unscale(params);
  if (found_inf_.at(key).item<double>() != 0.0) return false;
  opt.step();
  return true;
}

void GradScaler::update() {
  if (!opts_.enabled) return;
  if (found_inf_.empty()) return;  // nothing was unscaled this iteration (PyTorch asserts here)
  at::Tensor found = at::zeros({1}, scale_.options());
  for (const auto& [k, f] : found_inf_) found.add_(f.to(found.device()));
  found_inf_.clear();
  if (scale_.is_cuda()) {
    at::_amp_update_scale_(scale_, growth_tracker_, found, opts_.growth_factor, opts_.backoff_factor,
                           opts_.growth_interval);
    return;
  }
  if (found.item<double>() > 0.0) {
    scale_.mul_(opts_.backoff_factor);
    growth_tracker_.zero_();
    return;
  }
  const int64_t successful = growth_tracker_.item<int64_t>() + 1;
  if (successful == opts_.growth_interval) {
    const at::Tensor grown = scale_ * opts_.growth_factor;
    if (at::isfinite(grown).all().item<bool>()) scale_.copy_(grown);
    growth_tracker_.zero_();
  } else {
    growth_tracker_.fill_(successful);
  }
}

nlohmann::json GradScaler::state() const {
  return {{"enabled", opts_.enabled},
          {"scale", scale_.item<double>()},
          {"growth_tracker", growth_tracker_.item<int64_t>()},
          {"growth_factor", opts_.growth_factor},
          {"backoff_factor", opts_.backoff_factor},
          {"growth_interval", opts_.growth_interval}};
}

void GradScaler::load_state(const nlohmann::json& j) {
  if (j.is_null() || j.empty()) return;  // checkpoint without scaler state: keep the defaults
  try {
    opts_.enabled = j.at("enabled").get<bool>();
    opts_.growth_factor = j.at("growth_factor").get<double>();
    opts_.backoff_factor = j.at("backoff_factor").get<double>();
    opts_.growth_interval = j.at("growth_interval").get<int64_t>();
    scale_.fill_(j.at("scale").get<double>());
    growth_tracker_.fill_(j.at("growth_tracker").get<int64_t>());
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("GradScaler: invalid saved state (") + e.what() + ")");
  }
  found_inf_.clear();
}

}  // namespace medseg::training
