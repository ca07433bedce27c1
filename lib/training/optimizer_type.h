#pragma once
// The optimizer kinds by name, torch-free so that readers of trainer configs and checkpoints
// (and their fuzz targets) need not link the optimizers themselves.
#include <string>

namespace medseg::training {

// Adam: L2 weight decay (torch.optim.Adam); AdamW: decoupled weight decay.
enum class OptimizerType { SGD, Adam, AdamW };

// "SGD", "Adam", "AdamW": the names of trainer configs, checkpoints and logs.
const char* optimizer_type_name(OptimizerType t);
// The inverse; throws Error("<where>: unknown optimizer '<name>' (use SGD, Adam or AdamW)").
OptimizerType parse_optimizer_type(const std::string& name, const std::string& where);

}  // namespace medseg::training
