// dataset_fingerprint.json (fingerprint/fingerprint.h), ours or nnU-Net's.
#include "fingerprint/fingerprint.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  const std::string path = fuzz::write_scratch("dataset_fingerprint.json", data, size);
  fuzz::refuse_or_accept([&] { (void)fingerprint::load_fingerprint(path); });
  return 0;
}
