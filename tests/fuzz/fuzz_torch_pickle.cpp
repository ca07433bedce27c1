// The pickle reader of nnU-Net checkpoints (sharing/torch_pickle.h) on raw pickle bytes: every storage it asks
// for is zeros (up to 1 MiB; a larger claim is refused as an absent entry would be), so the fuzzer reaches the
// opcodes, globals, persistent ids and tensor views instead of the zip container around them. Every small
// tensor is then read through its strides: a view past its storage is an out-of-bounds read. The limits on
// values, slots and storage bytes (docs/hardening.md, "Limits") keep every allocation proportional to the input.
#include <set>

#include "fuzz_util.h"
#include "sharing/torch_pickle.h"

namespace {

void touch(const medseg::sharing::PickleValue* v, std::set<const medseg::sharing::PickleValue*>& seen) {
  if (!v || !seen.insert(v).second) return;  // pickles may share values or make cycles
  if (v->tensor.defined() && v->tensor.numel() < (1 << 16)) (void)v->tensor.contiguous();
  for (const auto* x : v->items) touch(x, seen);
  for (const auto& [k, x] : v->dict) {
    touch(k, seen);
    touch(x, seen);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  const sharing::StorageBytes zeros = [](const std::string& key, uint64_t bytes) {
    if (bytes > (1u << 20)) throw FileError("fuzz.pkl", "storage '" + key + "' too large for the harness");
    return std::string(bytes, '\0');
  };
  // As read_torch_file bounds them by the file's size: what the fuzzer may make allocate grows with its input.
  sharing::PickleLimits limits;
  limits.max_storage_bytes = 64 * size + (64u << 10);
  fuzz::refuse_or_accept([&] {
    const sharing::PickleDocument doc =
        sharing::decode_pickle(std::string(reinterpret_cast<const char*>(data), size), "fuzz.pkl", zeros, limits);
    std::set<const sharing::PickleValue*> seen;
    touch(&doc.root(), seen);
  });
  return 0;
}
