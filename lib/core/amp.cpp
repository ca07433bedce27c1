#include "core/amp.h"

#include <optional>

#include "core/enum_names.h"
#include "core/error.h"

namespace medseg {

static const EnumNames<AmpMode>& amp_names() {
  static const EnumNames<AmpMode> names = {
      {"auto", AmpMode::Auto}, {"off", AmpMode::Off}, {"fp16", AmpMode::Fp16}, {"bf16", AmpMode::Bf16}};
  return names;
}

AmpMode parse_amp(const std::string& value, const std::string& where, const std::string& file) {
  if (const std::optional<AmpMode> mode = find_name(amp_names(), value)) return *mode;
  const std::string problem = concat("must be one of ", quoted_names(amp_names()), ", got '", value, "'");
  MEDSEG_CHECK_FILE(file.empty(), file, "key '", where, "' ", problem);
  throw Error(concat(where, " ", problem));
}

const char* to_string(AmpMode mode) { return name_of(amp_names(), mode).c_str(); }

}  // namespace medseg
