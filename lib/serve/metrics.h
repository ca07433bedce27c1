#pragma once
// /v1/metrics in Prometheus' text exposition format (version 0.0.4).
#include <cstdint>
#include <string>

#include "serve/jobs.h"

namespace medseg::serve {

// Resident memory of this process in bytes (/proc/self/statm), 0 where unknown.
int64_t resident_bytes();

std::string prometheus_text(const StoreCounts& c, std::size_t queue_length, int64_t resident, int workers);

}  // namespace medseg::serve
