#pragma once
// What a rank trains on, in one line per case, for comparing ranks that may read different copies
// of the preprocessed data (one per host): the case id, its channels and shape, and the size and
// content hash (core/file_digest.h) of each of its files (<id>.npy, <id>_seg.npy, <id>.json).
// Reading every byte costs one pass over the fold's data at the start of training (a rank whose
// images were zeroed keeps their shapes; only the content tells).
#include <string>
#include <vector>

#include "data/case_source.h"

namespace medseg::data {

// One line per case of `source`, in its order, files read from `folder`. FileError naming a file
// that cannot be read.
std::vector<std::string> case_digests(const CaseSource& source, const std::string& folder);

}  // namespace medseg::data
