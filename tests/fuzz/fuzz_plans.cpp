// plans.json (plans/plans.h): every configuration, inherits_from chains included.
#include "fuzz_util.h"
#include "plans/plans.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  const std::string path = fuzz::write_scratch("plans.json", data, size);
  fuzz::refuse_or_accept([&] {
    const planning::Plans plans = planning::load_plans(path);
    for (const auto& name : plans.configuration_names()) (void)plans.configuration(name);
  });
  return 0;
}
