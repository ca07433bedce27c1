#pragma once
// Joining a run, bounded by one number: a rank that cannot join gives up once `timeout` (the run's
// --dist-timeout) has passed since it started joining, whatever the reason, and says which rank it
// waited for. On rank 0's store every rank publishes its WORLD_SIZE and the address it advertises
// for Gloo, then waits until every other rank has; so a missing rank, a rank started with another
// WORLD_SIZE or two processes with the same RANK are named here instead of surfacing as a time-out
// inside Gloo's connection setup. Gloo connects only once every rank is known to be there.
#include <chrono>
#include <string>
#include <vector>

#include "distributed/world.h"

namespace c10d {
class Store;
}

namespace medseg::distributed {

using Deadline = std::chrono::steady_clock::time_point;

// A rank other than 0: waits until rank 0's store accepts connections on MASTER_ADDR:MASTER_PORT
// (or `deadline`), so that c10d's own connect, which retries with a whole timeout per try, starts
// only once the master is there. Error naming rank 0 when it is not reachable in time.
void await_master(const World& world, Deadline deadline, std::chrono::seconds timeout);

// Publishes this rank and waits (until `deadline`) for every other one. Returns every rank's
// advertised address, indexed by rank. Error naming the missing ranks, a rank whose WORLD_SIZE
// differs, or a RANK started twice; `timeout` only words the message.
std::vector<std::string> await_ranks(c10d::Store& store, const World& world, const std::string& my_address,
                                     Deadline deadline, std::chrono::seconds timeout);

// "rank 1", "ranks 1, 3" (for messages).
std::string rank_list(const std::vector<int>& ranks);

// The ranks other than `self` a c10d failure message points at: the other rank of two, else the
// ranks whose address appears in `message` as "[addr]" (Gloo names the peer that way). Empty when
// nothing says.
std::vector<int> blamed_ranks(const std::string& message, const std::vector<std::string>& addresses, int self);

}  // namespace medseg::distributed
