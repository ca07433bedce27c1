#pragma once
// Mixed-precision mode, as a trainer config's "amp" and the --amp flags of medseg_train and
// medseg_predict spell it. One parser for all of them, so a typo is refused everywhere instead of
// silently running fp32 in one place.
#include <string>

namespace medseg {

enum class AmpMode { Auto, Off, Fp16, Bf16 };  // Auto: fp16 on CUDA, off on the CPU

// "auto", "off", "fp16", "bf16". Throws medseg::Error naming `where` (e.g. "--amp") for anything else;
// with a `file`, a FileError naming the file and `where` as its key.
AmpMode parse_amp(const std::string& value, const std::string& where, const std::string& file = "");
const char* to_string(AmpMode mode);

}  // namespace medseg
