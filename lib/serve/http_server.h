#pragma once
// cpp-httplib's server with medseg_serve's own connection loop. httplib 0.11 waits for a kept-alive connection's
// next request by polling every 10 ms: 1000 idle connections are 1000 threads waking 90000 times a second,
// which starved the accepting thread (connections took 55 ms each). Here a connection's thread sleeps in one
// poll() until its next request or the keep-alive timeout, and every request (headers and body) must arrive
// within `request_timeout_s`, so a client that trickles a byte at a time cannot hold a thread for longer.
// Parsing, routing and answering stay httplib's (Server::process_request).
#include <httplib.h>

namespace medseg::serve {

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(int request_timeout_s) : request_timeout_s_(request_timeout_s) {}

  // After bind_to_port: httplib 0.11 listens with a backlog of 5, so a burst of connections overflows it and
  // each one over waits for the client's SYN retry (1 s, then 3 s, ...). Linux takes a second listen() as the
  // new backlog.
  void widen_backlog(int backlog);

 private:
  bool process_and_close_socket(socket_t sock) override;
  int request_timeout_s_;
};

}  // namespace medseg::serve
