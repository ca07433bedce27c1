#pragma once
// Debian's libtorch-dev ships c10d/reducer.hpp but not this header, which reducer.hpp includes for
// two names only: the context pointer type of a member it never touches here, and GradCallback in a
// static_assert. These are the declarations PyTorch gives them (torch/csrc/distributed/autograd/
// context/context.h); lib/CMakeLists.txt adds this folder to the include path of
// distributed/gradient_sync.cpp only, and only when the LibTorch in use lacks the real header.
// Nothing here is defined or called: the library's own definitions are the ones linked.
#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
