#pragma once
// "Does every rank hold the same items?" for inputs that each host may read from its own copy
// (preprocessed cases, input images): each rank describes its items in one line apiece, the item's
// name first (data/case_digest.h, inference/input_digest.h), and the lines are compared with rank 0's.
#include <string>
#include <vector>

#include "distributed/process_group.h"

namespace medseg::distributed {

// One all-gather of a hash when every rank agrees; otherwise a second one of the lines, and Error on
// every rank naming the first rank that differs and its first differing item:
// "rank R <differs> rank 0: <item> 'NAME' differs (rank 0: LINE; rank R: LINE): <hint>".
void check_same_lines(ProcessGroup& group, const std::vector<std::string>& lines, const std::string& differs,
                      const std::string& item, const std::string& hint);

}  // namespace medseg::distributed
