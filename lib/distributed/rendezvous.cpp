#include "distributed/rendezvous.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cerrno>
#include <cstring>
#include <memory>

#include <cstdlib>
#include <thread>

#include "core/error.h"
#include "core/strings.h"

namespace medseg::distributed {
namespace {

const std::string kPrefix = "medseg/join/";

std::string as_string(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// "<world size> <address>", as published by each rank.
struct Arrival {
  int world_size = 0;
  std::string address;
};

Arrival parse(const std::string& v) {
  Arrival a;
  const auto space = v.find(' ');
  a.world_size = std::atoi(v.substr(0, space).c_str());
  if (space != std::string::npos) a.address = v.substr(space + 1);
  return a;
}

// One TCP connection attempt to host:port, waiting at most `wait`; "" on success, else why not.
std::string try_connect(const std::string& host, int port, std::chrono::milliseconds wait) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return std::string("MASTER_ADDR does not resolve: ") + gai_strerror(rc);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
  std::string why = "no address";
  for (const addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int err = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) {
        err = ETIMEDOUT;
      } else {
        socklen_t len = sizeof(err);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    ::close(fd);
    if (err == 0) return "";
    why = std::strerror(err);
  }
  return why;
}

}  // namespace

void await_master(const World& w, Deadline deadline, std::chrono::seconds timeout) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const std::string why = try_connect(w.master_addr, w.master_port, std::min(left, std::chrono::milliseconds(1000)));
    if (why.empty()) return;
    MEDSEG_CHECK(std::chrono::steady_clock::now() + std::chrono::milliseconds(200) < deadline, w.label(),
                 ": cannot reach rank 0's rendezvous on ", w.master_addr, ":", w.master_port, " within ",
                 timeout.count(), " s (", why, ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::string rank_list(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + join(ranks, ", ");
}

std::vector<std::string> await_ranks(c10d::Store& store, const World& w, const std::string& my_address,
                                     Deadline deadline, std::chrono::seconds timeout) {
  const std::string where = concat(w.master_addr, ":", w.master_port);
  std::vector<std::string> addresses(static_cast<size_t>(w.world_size));
  std::vector<bool> seen(static_cast<size_t>(w.world_size), false);
  try {
    // A second process with this RANK would overwrite our entry; the counter tells.
    MEDSEG_CHECK(store.add(kPrefix + "count/" + std::to_string(w.rank), 1) <= 1, w.label(),
                 ": another process already joined as RANK=", w.rank, " on ", where, ": every rank needs its own RANK");
    const std::string mine = std::to_string(w.world_size) + " " + my_address;
    store.set(kPrefix + std::to_string(w.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
    seen[static_cast<size_t>(w.rank)] = true;
    addresses[static_cast<size_t>(w.rank)] = my_address;
    for (;;) {
      std::vector<int> missing;
      for (int r = 0; r < w.world_size; ++r) {
        if (seen[static_cast<size_t>(r)]) continue;
        const std::string key = kPrefix + std::to_string(r);
        if (!store.check({key})) {
          missing.push_back(r);
          continue;
        }
        const Arrival a = parse(as_string(store.get(key)));
        MEDSEG_CHECK(a.world_size == w.world_size, w.label(), ": rank ", r,
                     " was started with WORLD_SIZE=", a.world_size, ", this rank with WORLD_SIZE=", w.world_size,
                     ": every rank of a run needs the same WORLD_SIZE");
        seen[static_cast<size_t>(r)] = true;
        addresses[static_cast<size_t>(r)] = a.address;
      }
      if (missing.empty()) return addresses;
      MEDSEG_CHECK(std::chrono::steady_clock::now() < deadline, w.label(), ": ", rank_list(missing), " of ",
                   w.world_size, " did not join within ", timeout.count(), " s (rendezvous on ", where,
                   "; is every rank started, with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE?)");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (const Error&) { throw; } catch (const std::exception& e) {
    // The store is rank 0's: it went away (rank 0 gave up or failed) while this rank waited.
    throw Error(w.label() + ": rank 0's rendezvous on " + where + " ended while this rank waited for the others (" +
                one_line(e.what()) + ")");
  }
}

std::vector<int> blamed_ranks(const std::string& message, const std::vector<std::string>& addresses, int self) {
  const int n = static_cast<int>(addresses.size());
  if (n == 2) return {1 - self};
  std::vector<int> out;
  for (int r = 0; r < n; ++r)
    if (r != self && !addresses[static_cast<size_t>(r)].empty() &&
        message.find("[" + addresses[static_cast<size_t>(r)] + "]") != std::string::npos)
      out.push_back(r);
  return out;
}

}  // namespace medseg::distributed
