// A preprocessed case's CASE.json (preprocessing/case_store.h), read as open_preprocessed_case does.
#include "core/json_io.h"
#include "fuzz_util.h"
#include "preprocessing/case_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  const std::string path = fuzz::write_scratch("case.json", data, size);
  fuzz::refuse_or_accept([&] { (void)preprocessing::case_properties_from_json(read_json(path), path); });
  return 0;
}
