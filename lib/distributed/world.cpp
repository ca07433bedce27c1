#include "distributed/world.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "core/error.h"

namespace medseg::distributed {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int env_int(const char* name, const std::string& value, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value.c_str(), &end, 10);
  MEDSEG_CHECK(errno == 0 && end != value.c_str() && *end == '\0' && v >= lo && v <= hi, "environment variable ", name,
               "='", value, "' must be an integer in [", lo, ", ", hi, "]");
  return static_cast<int>(v);
}

}  // namespace

std::string World::label() const { return distributed() ? concat("rank ", rank, " of ", world_size) : ""; }

World world_from_environment() {
  const auto rank = env("RANK"), size = env("WORLD_SIZE");
  World w;
  if (!rank && !size) return w;
  MEDSEG_CHECK(rank, "WORLD_SIZE is set but RANK is not: a distributed run needs both (see docs/distributed.md)");
  MEDSEG_CHECK(size, "RANK is set but WORLD_SIZE is not: a distributed run needs both (see docs/distributed.md)");
  w.world_size = env_int("WORLD_SIZE", *size, 1, 65536);
  w.rank = env_int("RANK", *rank, 0, w.world_size - 1);
  w.local_rank = env("LOCAL_RANK") ? env_int("LOCAL_RANK", *env("LOCAL_RANK"), 0, 65535) : w.rank;
  if (!w.distributed()) return w;
  if (const auto addr = env("MASTER_ADDR")) w.master_addr = *addr;
  const auto port = env("MASTER_PORT");
  MEDSEG_CHECK(port, "WORLD_SIZE=", *size, " but MASTER_PORT is not set: rank 0's rendezvous port is needed");
  w.master_port = env_int("MASTER_PORT", *port, 1, 65535);
  return w;
}

}  // namespace medseg::distributed
