#pragma once
// A reader for files written by Python's torch.save (a zip archive: <name>/data.pkl, <name>/data/<key>) that
// runs no code: the pickle is decoded into plain values by a small pickle machine that knows tensors and plain
// containers only. The globals it accepts are data, not behaviour:
//   collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, torch.<Type>Storage,
//   torch.device, numpy's scalar and dtype (nnU-Net's logs hold numpy floats), _codecs.encode (how protocol 2
//   spells bytes).
// A pickle that names any other global (os.system, builtins.eval, a class) is refused, naming it; opcodes
// outside protocols 2-4's data opcodes are refused too. Nothing named in a pickle is ever called.
#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace medseg::sharing {

struct PickleValue;
// Values point at each other (a pickle may share one object, or even make a cycle); they are owned by the
// PickleDocument that decoded them, and live as long as it does.
using PickleRef = PickleValue*;

struct PickleValue {
  enum class Kind { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict, Tensor, Device, Global, Storage, Dtype };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                                      // String, Bytes, Device, Global ("module.name"), Dtype
  std::vector<PickleRef> items;                       // List, Tuple
  std::vector<std::pair<PickleRef, PickleRef>> dict;  // Dict, in insertion order
  at::Tensor tensor;                                  // Tensor; Storage (one-dimensional, the whole storage)

  // Dict lookup by string key; nullptr when absent or not a dict.
  const PickleValue* get(const std::string& key) const;
};

// The values of one pickle and their owner. Movable; the values stay where they are.
class PickleDocument {
 public:
  const PickleValue& root() const { return *root_; }
  const PickleValue* operator->() const { return root_; }
  PickleValue* make();  // a new value owned by this document
  void set_root(PickleValue* v) { root_ = v; }

 private:
  std::vector<std::unique_ptr<PickleValue>> values_;
  PickleValue* root_ = nullptr;
};

// The bytes of storage `key` (`bytes` long), or a FileError naming what is missing.
using StorageBytes = std::function<std::string(const std::string& key, uint64_t bytes)>;

// What one pickle may cost, checked as it is decoded, before anything is allocated (docs/hardening.md,
// "Limits"). A few kilobytes of deflated opcodes must not become gigabytes.
struct PickleLimits {
  // Values made (each about 150 bytes) and stack, container and memo slots filled (8-48 bytes each).
  // nnU-Net's checkpoints make about 20 k values; 1000 epochs of logs for 400 classes about 450 k.
  int64_t max_values = int64_t(1) << 20;
  int64_t max_slots = int64_t(4) << 20;
  // All storages together; read_torch_file sets it from the file's size (torch.save stores them
  // uncompressed) unless a caller knows a smaller bound (what the plans' network needs).
  uint64_t max_storage_bytes = uint64_t(1) << 32;
};

// Decodes one pickle (a torch.save archive's data.pkl); `source` names it in errors. Storages come from
// `storage`. The checks of read_torch_file apply; tensor views must lie inside their storage and present
// no more elements than it holds (an expanded, stride-0 view is refused).
PickleDocument decode_pickle(const std::string& pickle, const std::string& source, const StorageBytes& storage,
                             const PickleLimits& limits = {});

// The largest data.pkl read (nnU-Net's are a few hundred kilobytes).
constexpr uint64_t kMaxPickleBytes = uint64_t(64) << 20;

// Reads a torch.save file. Throws FileError naming the file for a file that is not a torch zip archive, a
// refused global or opcode (named), a storage the archive lacks or holds too few bytes of, and a pickle
// beyond `limits`. The storages may hold at most twice the file's size and 1 MiB together, and at most
// `max_storage_bytes` when that is smaller: torch.save stores them uncompressed, so more is a zip bomb.
PickleDocument read_torch_file(const std::string& path, const PickleLimits& limits = {});

}  // namespace medseg::sharing
