#include "checkpoint/optimizer_state.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "core/error.h"
#include "core/torch_compat.h"

using nlohmann::json;

namespace medseg::checkpoint {
namespace {

json options_json(const torch::optim::OptimizerOptions& o) {
  if (auto* s = dynamic_cast<const torch::optim::SGDOptions*>(&o))
    return {{"lr", s->lr()},
            {"momentum", s->momentum()},
            {"dampening", s->dampening()},
            {"weight_decay", s->weight_decay()},
            {"nesterov", s->nesterov()}};
  if (auto* a = dynamic_cast<const torch::optim::AdamWOptions*>(&o))
    return {{"lr", a->lr()},   {"beta1", std::get<0>(a->betas())},  {"beta2", std::get<1>(a->betas())},
            {"eps", a->eps()}, {"weight_decay", a->weight_decay()}, {"amsgrad", a->amsgrad()}};
  if (auto* a = dynamic_cast<const torch::optim::AdamOptions*>(&o))
    return {{"lr", a->lr()},   {"beta1", std::get<0>(a->betas())},  {"beta2", std::get<1>(a->betas())},
            {"eps", a->eps()}, {"weight_decay", a->weight_decay()}, {"amsgrad", a->amsgrad()}};
  throw Error("optimizer options of an unsupported optimizer");
}

void apply_options(torch::optim::OptimizerOptions& o, const json& j) {
  auto d = [&](const char* k) { return j.at(k).get<double>(); };
  auto b = [&](const char* k) { return j.at(k).get<bool>(); };
  if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&o)) {
    sgd->lr(d("lr")).momentum(d("momentum")).dampening(d("dampening"));
    sgd->weight_decay(d("weight_decay")).nesterov(b("nesterov"));
  } else if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&o)) {
    adamw->lr(d("lr")).betas(std::make_tuple(d("beta1"), d("beta2"))).eps(d("eps"));
    adamw->weight_decay(d("weight_decay")).amsgrad(b("amsgrad"));
  } else if (auto* adam = dynamic_cast<torch::optim::AdamOptions*>(&o)) {
    adam->lr(d("lr")).betas(std::make_tuple(d("beta1"), d("beta2"))).eps(d("eps"));
    adam->weight_decay(d("weight_decay")).amsgrad(b("amsgrad"));
  }
}

// Copies a saved buffer onto the parameter's device as an independent tensor.
at::Tensor place(const at::Tensor& saved, const at::Tensor& param) {
  return saved.to(param.device(), saved.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
}

void put(std::map<std::string, at::Tensor>& m, const char* slot, const at::Tensor& t) {
  if (t.defined()) m[slot] = t;
}

template <class State>
void capture_adam(const State& s, const std::string& name, OptimizerState& out) {
  out.scalars[name] = {{"step", s.step()}};
  auto& b = out.buffers[name];
  put(b, "exp_avg", s.exp_avg());
  put(b, "exp_avg_sq", s.exp_avg_sq());
  put(b, "max_exp_avg_sq", s.max_exp_avg_sq());
}

template <class State>
std::unique_ptr<State> restore_adam(const OptimizerState& st, const std::string& name, const at::Tensor& p) {
  auto s = std::make_unique<State>();
  const auto sit = st.scalars.find(name);
  if (sit != st.scalars.end()) s->step(sit->second.at("step").template get<int64_t>());
  static const std::map<std::string, at::Tensor> none;
  const auto bit = st.buffers.find(name);
  const auto& b = bit == st.buffers.end() ? none : bit->second;
  if (b.count("exp_avg")) s->exp_avg(place(b.at("exp_avg"), p));
  if (b.count("exp_avg_sq")) s->exp_avg_sq(place(b.at("exp_avg_sq"), p));
  if (b.count("max_exp_avg_sq")) s->max_exp_avg_sq(place(b.at("max_exp_avg_sq"), p));
  return s;
}

}  // namespace

std::unordered_map<const c10::TensorImpl*, std::string> parameter_names(const torch::nn::Module& model) {
  std::unordered_map<const c10::TensorImpl*, std::string> names;
  for (const auto& item : model.named_parameters(/*recurse=*/true))
    names.emplace(item.value().unsafeGetTensorImpl(), item.key());  // first name wins
  return names;
}

std::string optimizer_type(const torch::optim::Optimizer& opt) {
  if (dynamic_cast<const torch::optim::SGD*>(&opt)) return "SGD";
  if (dynamic_cast<const torch::optim::AdamW*>(&opt)) return "AdamW";
  if (dynamic_cast<const torch::optim::Adam*>(&opt)) return "Adam";
  throw Error("checkpoint: unsupported optimizer (SGD, Adam and AdamW are supported)");
}

OptimizerState capture_optimizer_state(torch::optim::Optimizer& opt, const torch::nn::Module& model) {
  OptimizerState out;
  out.type = optimizer_type(opt);
  const auto names = parameter_names(model);
  auto& state = opt.state();
  for (const auto& group : opt.param_groups()) {
    json params = json::array();
    for (const auto& p : group.params()) {
      auto n = names.find(p.unsafeGetTensorImpl());
      MEDSEG_CHECK(n != names.end(), "checkpoint: the optimizer holds a parameter that is not in the model");
      params.push_back(n->second);
      auto it = state.find(compat::optimizer_state_key(state, p));
      if (it == state.end()) continue;  // no step taken yet for this parameter
      const auto* raw = it->second.get();
      if (auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(raw)) {
        put(out.buffers[n->second], "momentum_buffer", sgd->momentum_buffer());
      } else if (auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(raw)) {
        capture_adam(*adamw, n->second, out);
      } else if (auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(raw)) {
        capture_adam(*adam, n->second, out);
      }
    }
    out.groups.push_back({{"options", options_json(group.options())}, {"params", params}});
  }
  return out;
}

void restore_optimizer_state(torch::optim::Optimizer& opt, const torch::nn::Module& model, const OptimizerState& st) {
  const std::string type = optimizer_type(opt);
  MEDSEG_CHECK(st.type == type, "checkpoint: optimizer state is for ",
               (st.type.empty() ? std::string("no optimizer") : st.type), ", but the trainer uses ", type);
  auto& groups = opt.param_groups();
  MEDSEG_CHECK(st.groups.size() == groups.size(), "checkpoint: optimizer has ", groups.size(),
               " parameter groups, checkpoint has ", st.groups.size());
  const auto names = parameter_names(model);
  auto& state = opt.state();
  state.clear();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    apply_options(groups[g].options(), st.groups[g].at("options"));
    for (const auto& p : groups[g].params()) {
      auto n = names.find(p.unsafeGetTensorImpl());
      MEDSEG_CHECK(n != names.end(), "checkpoint: the optimizer holds a parameter that is not in the model");
      const std::string& name = n->second;
      if (!st.buffers.count(name) && !st.scalars.count(name)) continue;
      const auto key = compat::optimizer_state_key(state, p);
      if (type == "SGD") {
        auto s = std::make_unique<torch::optim::SGDParamState>();
        const auto bit = st.buffers.find(name);
        if (bit != st.buffers.end() && bit->second.count("momentum_buffer"))
          s->momentum_buffer(place(bit->second.at("momentum_buffer"), p));
        state[key] = std::move(s);
      } else if (type == "AdamW") {
        state[key] = restore_adam<torch::optim::AdamWParamState>(st, name, p);
      } else {
        state[key] = restore_adam<torch::optim::AdamParamState>(st, name, p);
      }
    }
  }
}

}  // namespace medseg::checkpoint
