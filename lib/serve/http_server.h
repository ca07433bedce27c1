#pragma once
// cpp-httplib's server with medseg_serve's own connection loop. httplib 0.11 waits for a kept-alive connection's
// next request by polling every 10 ms: 1000 idle connections are 1000 threads waking 90000 times a second,
// which starved the accepting thread (connections took 55 ms each). Here a connection's thread sleeps in one
// poll() until its next request or the keep-alive timeout, and every request (headers and body) must arrive
// within `request_timeout_s`, so a client that trickles a byte at a time cannot hold a thread for longer.
// Parsing, routing and answering stay httplib's (Server::process_request).
#include <httplib.h>

#include <functional>
#include <string>

namespace medseg::serve {

// A handler that answers before reading the request's body (a refusal) calls this: the connection is closed
// after the answer, since the unread body would otherwise be taken for the next request. Handlers run on the
// connection's thread, so the mark is thread-local.
void close_connection_after_answer();

class HttpServer : public httplib::Server {
 public:
  // `allowed(path)`: the methods a path takes ("" for no such path), for the 405 of a method httplib cannot
  // parse (TRACE, ...: it would answer 400).
  HttpServer(int request_timeout_s, std::function<std::string(const std::string&)> allowed)
      : request_timeout_s_(request_timeout_s), allowed_(std::move(allowed)) {}

  // After bind_to_port: httplib 0.11 listens with a backlog of 5, so a burst of connections overflows it and
  // each one over waits for the client's SYN retry (1 s, then 3 s, ...). Linux takes a second listen() as the
  // new backlog.
  void widen_backlog(int backlog);

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool refused_unknown_method(int sock);
  int request_timeout_s_;
  std::function<std::string(const std::string&)> allowed_;
};

}  // namespace medseg::serve
