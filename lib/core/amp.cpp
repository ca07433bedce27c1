#include "core/amp.h"

#include "core/error.h"

namespace medseg {

AmpMode parse_amp(const std::string& value, const std::string& where, const std::string& file) {
  for (AmpMode m : {AmpMode::Auto, AmpMode::Off, AmpMode::Fp16, AmpMode::Bf16})
    if (value == to_string(m)) return m;
  const std::string problem = concat("must be auto, off, fp16 or bf16, got '", value, "'");
  MEDSEG_CHECK_FILE(file.empty(), file, "key '", where, "' ", problem);
  throw Error(concat(where, " ", problem));
}

const char* to_string(AmpMode mode) {
  switch (mode) {
    case AmpMode::Auto: return "auto";
    case AmpMode::Off: return "off";
    case AmpMode::Fp16: return "fp16";
    case AmpMode::Bf16: return "bf16";
  }
  return "auto";
}

}  // namespace medseg
