#pragma once
// Precompiled for every torch-using translation unit (lib/{data,models,training,inference},
// tests/nn). Headers still include the narrow torch headers they need, so the build works
// with MEDSEG_USE_PCH=OFF too.
#include <torch/torch.h>
