#include "models/activation_checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/autograd.h>

#include <mutex>

#include "core_torch/autocast.h"
#include "core/torch_compat.h"

namespace medseg::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor cpu_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const at::Tensor& s) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(s);
}

// Everything backward needs besides the saved inputs. Held in ctx->saved_data as a capsule, so it is
// freed with the autograd node (no raw closure pointer to leak).
struct Closure : torch::CustomClassHolder {
  TensorFn fn;
  std::vector<torch::Tensor> params;
  at::Tensor cpu_rng;
  std::vector<at::Tensor> cuda_rng;
  bool cpu_autocast = false, cuda_autocast = false;
  c10::ScalarType cpu_dtype = at::kBFloat16, cuda_dtype = at::kHalf;
};

// Sets the RNG to the forward's state and puts the caller's state back afterwards (like fork_rng).
class RngReplay {
 public:
  explicit RngReplay(const Closure& c) : cpu_(cpu_rng_state()), cuda_(compat::cuda_rng_states()) {
    set_cpu_rng_state(c.cpu_rng);
    compat::set_cuda_rng_states(c.cuda_rng);
  }
  ~RngReplay() {
    set_cpu_rng_state(cpu_);
    compat::set_cuda_rng_states(cuda_);
  }

 private:
  at::Tensor cpu_;
  std::vector<at::Tensor> cuda_;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  static variable_list forward(AutogradContext* ctx, at::TensorList inputs, at::TensorList params,
                               c10::intrusive_ptr<Closure> closure) {
    (void)params;  // inputs of the node only so that their gradients are returned by backward
    closure->cpu_rng = cpu_rng_state();
    closure->cuda_rng = compat::cuda_rng_states();
    closure->cpu_autocast = compat::autocast_enabled(false);
    closure->cpu_dtype = compat::autocast_dtype(false);
    closure->cuda_autocast = compat::autocast_enabled(true);
    closure->cuda_dtype = compat::autocast_dtype(true);
    ctx->save_for_backward(inputs.vec());
    ctx->saved_data["n_inputs"] = static_cast<int64_t>(inputs.size());
    ctx->saved_data["closure"] = c10::IValue::make_capsule(closure);
    torch::NoGradGuard no_grad;
    return closure->fn(inputs.vec());
  }

  // The forward pass again, with grad, under the random state and autocast of the first one.
  static std::vector<torch::Tensor> recompute(Closure& closure, const std::vector<torch::Tensor>& inputs) {
    RngReplay rng(closure);
    AutocastGuard cpu_cast(false, closure.cpu_autocast, closure.cpu_dtype);
    AutocastGuard cuda_cast(true, closure.cuda_autocast, closure.cuda_dtype);
    torch::AutoGradMode grad_on(true);
    return closure.fn(inputs);
  }

  // Each tensor's index in `targets` (where it is appended) when it needs a gradient, else -1.
  static std::vector<int> gradient_slots(const std::vector<torch::Tensor>& tensors, variable_list& targets) {
    std::vector<int> slots;
    for (const auto& t : tensors) {
      slots.push_back(t.requires_grad() ? static_cast<int>(targets.size()) : -1);
      if (t.requires_grad()) targets.push_back(t);
    }
    return slots;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto capsule = ctx->saved_data["closure"].toCapsule();
    auto* closure = static_cast<Closure*>(capsule.get());
    const variable_list saved = ctx->get_saved_variables();

    std::vector<torch::Tensor> inputs;
    inputs.reserve(saved.size());
    for (const auto& t : saved) {
      auto d = t.detach();
      d.requires_grad_(t.requires_grad());
      inputs.push_back(d);
    }
    const std::vector<torch::Tensor> outputs = recompute(*closure, inputs);

    variable_list outs, gouts, targets;
    for (size_t i = 0; i < outputs.size() && i < grad_outputs.size(); ++i) {
      if (outputs[i].requires_grad() && grad_outputs[i].defined()) {
        outs.push_back(outputs[i]);
        gouts.push_back(grad_outputs[i]);
      }
    }
    const std::vector<int> input_slot = gradient_slots(inputs, targets);
    const std::vector<int> param_slot = gradient_slots(closure->params, targets);

    variable_list grads;
    if (!outs.empty() && !targets.empty())
      grads = torch::autograd::grad(outs, targets, gouts, /*retain_graph=*/false, /*create_graph=*/false,
                                    /*allow_unused=*/true);
    variable_list result;
    result.reserve(inputs.size() + closure->params.size() + 1);
    auto pick = [&](int slot) { return slot >= 0 && !grads.empty() ? grads[slot] : torch::Tensor(); };
    for (int s : input_slot) result.push_back(pick(s));
    for (int s : param_slot) result.push_back(pick(s));
    result.emplace_back();  // the closure argument
    return result;
  }
};

bool any_requires_grad(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  for (const auto& t : a)
    if (t.defined() && t.requires_grad()) return true;
  for (const auto& t : b)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

}  // namespace

std::vector<torch::Tensor> activation_checkpoint(const TensorFn& fn, const std::vector<torch::Tensor>& inputs,
                                                 const std::vector<torch::Tensor>& params) {
  if (!torch::GradMode::is_enabled() || !any_requires_grad(inputs, params)) return fn(inputs);
  auto closure = c10::make_intrusive<Closure>();
  closure->fn = fn;
  closure->params = params;
  return CheckpointFunction::apply(at::TensorList(inputs), at::TensorList(params), closure);
}

torch::Tensor activation_checkpoint(const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                                    const torch::Tensor& x, const torch::nn::Module& module) {
  std::vector<torch::Tensor> params;
  for (const auto& p : module.parameters())
    if (p.requires_grad()) params.push_back(p);
  auto out = activation_checkpoint(
      [fn](const std::vector<torch::Tensor>& in) { return std::vector<torch::Tensor>{fn(in[0])}; }, {x}, params);
  return out.at(0);
}

}  // namespace medseg::models
