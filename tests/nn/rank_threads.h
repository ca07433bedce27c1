#pragma once
// N ranks of a loopback run as N threads of the test process: each thread joins its own
// distributed::ProcessGroup (Gloo on 127.0.0.1, a free port) and runs `body`. The first exception
// of any rank is rethrown on the test thread after every thread has ended. A rank that throws
// closes its group, so its peers fail within `timeout` instead of hanging.
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/launch.h"
#include "distributed/process_group.h"

namespace medseg {

inline void run_ranks(int n, const std::function<void(distributed::ProcessGroup&)>& body,
                      std::chrono::seconds timeout = std::chrono::seconds(30)) {
  const int port = distributed::free_loopback_port();
  std::mutex m;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        distributed::World w;
        w.rank = r;
        w.world_size = n;
        w.master_port = port;
        distributed::ProcessGroupOptions o;
        o.timeout = timeout;
        auto group = distributed::ProcessGroup::connect(w, o);
        body(*group);
        group->barrier();
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!first) first = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace medseg
