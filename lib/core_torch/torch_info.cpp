#include "core_torch/torch_info.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include "core/error.h"
#include "core/torch_compat.h"

namespace medseg {

std::string torch_build_summary() {
  std::string s = "LibTorch " + compat::torch_version();
  if (!compat::built_with_cuda()) return s + " (CPU build)";
  const auto v = compat::cuda_versions();
  s += concat(" (CUDA ", v.cudart / 1000, ".", v.cudart % 1000 / 10, " build");
  if (v.cudnn > 0) s += concat(", cuDNN ", v.cudnn);
  s += torch::cuda::is_available() ? ", GPU available)" : ", no GPU visible)";
  return s;
}

}  // namespace medseg
