// dataset.json: the parser and validator (io/dataset.h), then what callers ask of it next.
#include "fuzz_util.h"
#include "io/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  fuzz::write_scratch("dataset.json", data, size);
  fuzz::refuse_or_accept([&] {
    const io::DatasetInfo info = io::load_dataset_info(fuzz::scratch_dir());
    (void)info.label_values();
    (void)info.has_regions();
    (void)io::list_training_cases(info);  // the explicit "dataset" mapping, if any
  });
  return 0;
}
