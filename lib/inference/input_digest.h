#pragma once
// What a rank of a sharded prediction reads, one line per case: the case id, then each input file's
// name, size and content hash (core/file_digest.h). Ranks on different hosts may read their own copies
// of the input folder; the lines are compared with rank 0's (distributed/same_everywhere.h) before the
// first case, so a host whose copy differs is named instead of silently contributing other tiles.
#include <string>
#include <vector>

#include "inference/case_inputs.h"

namespace medseg::inference {

// A file that cannot be read is described as such (the case then fails on every rank alike).
std::vector<std::string> input_digests(const std::vector<CaseInput>& cases);

}  // namespace medseg::inference
