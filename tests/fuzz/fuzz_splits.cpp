// splits_final.json (training/splits.h), including the check of the listed cases against a dataset.
#include "fuzz_util.h"
#include "training/splits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  const std::string path = fuzz::write_scratch("splits_final.json", data, size);
  fuzz::refuse_or_accept([&] { (void)training::read_splits(path); });
  fuzz::refuse_or_accept([&] { (void)training::load_or_create_splits(path, {"case_000", "case_001", "case_002"}); });
  return 0;
}
