#pragma once
#include <string>

namespace medseg {
// "LibTorch 1.13.0 (CPU build)" — printed by CLIs with --version and in logs.
std::string torch_build_summary();
}  // namespace medseg
