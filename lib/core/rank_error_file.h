#pragma once
// The environment variable that the local launcher (distributed/launch.h) sets in each rank's environment: the
// file a failing rank writes its one error line to (apps/cli_common.cpp) instead of stderr; the launcher prints
// the first failing rank's line, once. In core because every CLI's error path reads it, and most CLIs do not
// link the distributed stage.

namespace medseg {

inline constexpr char kRankErrorFileVariable[] = "MEDSEG_RANK_ERROR_FILE";

}  // namespace medseg
