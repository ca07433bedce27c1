#include "training/optimizer_type.h"

#include "core/error.h"

namespace medseg::training {

const char* optimizer_type_name(OptimizerType t) {
  switch (t) {
    case OptimizerType::SGD: return "SGD";
    case OptimizerType::Adam: return "Adam";
    case OptimizerType::AdamW: return "AdamW";
  }
  return "?";
}

OptimizerType parse_optimizer_type(const std::string& name, const std::string& where) {
  for (OptimizerType t : {OptimizerType::SGD, OptimizerType::Adam, OptimizerType::AdamW})
    if (name == optimizer_type_name(t)) return t;
  throw Error(where + ": unknown optimizer '" + name + "' (use SGD, Adam or AdamW)");
}

}  // namespace medseg::training
