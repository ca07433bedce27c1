// The checkpoint reader (checkpoint/container.h, checkpoint.h): header-only read and full load.
// A valid CRC is out of the fuzzer's reach, so when the first byte is odd the harness appends a
// correct trailer (payload size, CRC32, "CKOK") to the rest of the input: the tensor table, the
// strides and the JSON copies behind the checksum get fuzzed too.
#include <zlib.h>

#include <cstring>

#include "checkpoint/checkpoint.h"
#include "checkpoint/container.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  if (size < 1) return 0;
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) {
    const uint64_t n = bytes.size();
    const auto crc = static_cast<uint32_t>(
        crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
    char trailer[16];
    std::memcpy(trailer, &n, 8);  // little-endian hosts only, as the format
    std::memcpy(trailer + 8, &crc, 4);
    std::memcpy(trailer + 12, "CKOK", 4);
    bytes.append(trailer, 16);
  }
  const std::string path = fuzz::write_scratch("fuzz.ckpt", bytes.data(), bytes.size());
  fuzz::refuse_or_accept([&] { (void)checkpoint::read_archive_header(path); });
  fuzz::refuse_or_accept([&] {
    const checkpoint::Checkpoint ck = checkpoint::load_checkpoint(path);
    // Touch every element of small tensors through their strides: a view past its storage is
    // then an out-of-bounds read.
    for (const auto& [name, t] : ck.weights)
      if (t.numel() < (1 << 16)) (void)t.contiguous();
  });
  return 0;
}
