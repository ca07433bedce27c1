#pragma once
// Files that Python's torch.load reads with weights_only=True, on every torch medseg supports (1.13 to
// 2.11), written without Python. LibTorch's own torch::pickle_save tags typed dicts with
// torch.jit._pickle.restore_type_tag, a global weights_only refuses (issue 42), so the pickle is written
// here with only what torch.save itself writes for a checkpoint: protocol 2, plain containers and
// torch._utils._rebuild_tensor_v2 over torch.<Type>Storage persistent ids; the archive holds
// archive/data.pkl, archive/data/<key> (stored, not deflated), archive/byteorder and archive/version.
#include <ATen/core/ivalue.h>

#include <string>

namespace medseg::sharing {

// Writes `value` to `path` as torch.save would. Values: None, bool, int, float, str, tuples, lists,
// dicts with string keys, and CPU tensors; tensors that share storage share it in the file. Throws
// Error naming the unsupported type, FileError naming the file when it cannot be written.
void torch_save(const c10::IValue& value, const std::string& path);

}  // namespace medseg::sharing
