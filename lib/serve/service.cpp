#include "serve/service.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "serve/connection_threads.h"
#include "serve/http_server.h"
#include "serve/routes.h"
#include "serve/workers.h"

namespace fs = std::filesystem;

namespace medseg::serve {

namespace {

// cpp-httplib's task queue interface over the growing pool (connection_threads.h).
class ConnectionQueue : public httplib::TaskQueue {
 public:
  explicit ConnectionQueue(std::size_t max) : threads_(max) {}
  void enqueue(std::function<void()> fn) override { threads_.enqueue(std::move(fn)); }
  void shutdown() override { threads_.shutdown(); }

 private:
  ConnectionThreads threads_;
};

// A private folder (0700, mkdtemp) for the uploads and results; removed with the Service.
std::string make_scratch(const std::string& parent) {
  std::string p = parent;
  if (p.empty()) p = fs::temp_directory_path().string();
  std::string tmpl = (fs::path(p) / "medseg-serve-XXXXXX").string();
  MEDSEG_CHECK_FILE(::mkdtemp(tmpl.data()) != nullptr, p, "cannot make the server's scratch folder there");
  return tmpl;
}

JobStoreOptions store_options(const ServeOptions& o) {
  JobStoreOptions s;
  s.max_queue = o.max_queue;
  s.max_scratch_bytes = o.max_scratch_bytes;
  s.result_ttl_s = o.result_ttl_s;
  s.unfetched_ttl_s = o.unfetched_ttl_s;
  return s;
}

}  // namespace

struct Service::Impl {
  ServeOptions o;
  std::string scratch;
  JobStore store;
  std::unique_ptr<Workers> workers;
  std::unique_ptr<RouteContext> routes;
  HttpServer http;
  int port = 0;
  std::mutex m;
  std::condition_variable cv;
  bool stop_requested = false;

  explicit Impl(ServeOptions opts)
      : o(std::move(opts)),
        scratch(make_scratch(o.scratch_parent)),
        store(store_options(o)),
        http(o.upload_timeout_s, allowed_methods) {}
  ~Impl() {
    store.close();
    store.stop_running();
    if (workers) workers->join();
    std::error_code ec;
    fs::remove_all(scratch, ec);
  }
  void configure_http();
  void drain();
};

void Service::Impl::configure_http() {
  const std::size_t max_connections = static_cast<std::size_t>(o.max_connections);
  http.new_task_queue = [max_connections] { return new ConnectionQueue(max_connections); };
  http.set_read_timeout(o.read_timeout_s, 0);
  http.set_write_timeout(o.read_timeout_s, 0);
  http.set_keep_alive_timeout(o.keep_alive_timeout_s);
  http.set_keep_alive_max_count(100);
  http.set_payload_max_length(static_cast<size_t>(o.max_upload_bytes) + 65536);
  add_routes(http, *routes);
}

// SIGTERM: no new jobs; queued ones cancelled; running ones finish within the grace, then are cancelled.
void Service::Impl::drain() {
  routes->stopping = true;
  store.close();
  const auto grace =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.stop_grace_s * 1000));
  if (!store.wait_idle(grace)) {
    spdlog::warn("stopping: running jobs did not end within {} s (--stop_grace_s); cancelling them", o.stop_grace_s);
    store.stop_running();
  }
  workers->join();
  http.stop();
}

Service::Service(ServeOptions o) {
  const std::string why = check_options(o);
  MEDSEG_CHECK(why.empty(), why);
  impl_ = std::make_unique<Impl>(std::move(o));
  Impl& s = *impl_;
  s.workers = std::make_unique<Workers>(s.o, s.store);
  s.routes = std::unique_ptr<RouteContext>(new RouteContext{s.o, s.store, {}, s.scratch});
  for (std::size_t k = 0; k < s.o.models.size(); ++k) s.routes->models[s.o.models[k].name] = s.workers->models()[k];
  s.configure_http();
  if (s.o.port == 0) {
    s.port = s.http.bind_to_any_port(s.o.host);
  } else {
    s.port = s.http.bind_to_port(s.o.host, s.o.port) ? s.o.port : -1;
  }
  MEDSEG_CHECK(s.port >= 0, "cannot listen on ", s.o.host, ":", s.o.port, " (in use, or not this host's address)");
  s.http.widen_backlog(std::max(128, s.o.max_connections));
}

Service::~Service() = default;

int Service::port() const { return impl_->port; }

void Service::run() {
  Impl& s = *impl_;
  std::thread listener([&s] { s.http.listen_after_bind(); });
  std::unique_lock<std::mutex> l(s.m);
  while (!s.stop_requested) {
    s.cv.wait_for(l, std::chrono::seconds(1));
    s.store.expire();
  }
  l.unlock();
  s.drain();
  listener.join();
}

void Service::stop() {
  {
    std::lock_guard<std::mutex> l(impl_->m);
    impl_->stop_requested = true;
  }
  impl_->cv.notify_all();
}

}  // namespace medseg::serve
