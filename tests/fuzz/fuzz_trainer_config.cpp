// Trainer configs (configs/*.json, training/trainer_config.h).
#include "fuzz_util.h"
#include "training/trainer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  const std::string path = fuzz::write_scratch("trainer.json", data, size);
  fuzz::refuse_or_accept([&] { (void)training::load_trainer_config(path); });
  return 0;
}
