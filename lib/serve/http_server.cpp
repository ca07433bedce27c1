#include "serve/http_server.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace medseg::serve {

namespace {

thread_local bool t_close_after_answer = false;

using Clock = std::chrono::steady_clock;

// Waits up to `timeout_ms` for `events`; true when they came.
bool wait_for(int fd, short events, int64_t timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(timeout_ms, 0)));
    if (r < 0 && errno == EINTR) continue;
    return r > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if ((peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n)
            : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n)) != 0)
    return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    port = ntohs(v6->sin6_port);
  }
  ip = buf;
}

// One request's view of the socket: each read waits at most `read_ms`, and none past `deadline`.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int fd, int64_t read_ms, int64_t write_ms, Clock::time_point deadline)
      : fd_(fd), read_ms_(read_ms), write_ms_(write_ms), deadline_(deadline) {}
  bool is_readable() const override { return wait_for(fd_, POLLIN, std::min(read_ms_, left_ms())); }
  bool is_writable() const override { return wait_for(fd_, POLLOUT, write_ms_); }
  ssize_t read(char* ptr, size_t size) override {
    if (!is_readable()) return -1;
    ssize_t n;
    do n = ::recv(fd_, ptr, size, 0);
    while (n < 0 && errno == EINTR);
    return n;
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(fd_, false, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  int64_t left_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
  }
  int fd_;
  int64_t read_ms_, write_ms_;
  Clock::time_point deadline_;
};

}  // namespace

void close_connection_after_answer() { t_close_after_answer = true; }

void HttpServer::widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }

// httplib 0.11 knows these methods; another one it answers 400 ("malformed") where HTTP wants 405 or 501.
bool HttpServer::refused_unknown_method(int sock) {
  char buf[512];
  const ssize_t n = ::recv(sock, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return false;
  const std::string line(buf, static_cast<std::size_t>(n));
  const auto sp = line.find(' ');
  if (sp == std::string::npos) return false;  // too short to tell: httplib decides
  const std::string method = line.substr(0, sp);
  for (const char* known : {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "PATCH", "PRI"})
    if (method == known) return false;
  const auto end = line.find_first_of(" ?\r\n", sp + 1);
  const std::string allow = allowed_(line.substr(sp + 1, end == std::string::npos ? std::string::npos : end - sp - 1));
  const std::string body = allow.empty() ? "{\"error\":\"no such path\"}\n" : "{\"error\":\"method not allowed\"}\n";
  const std::string answer = std::string(allow.empty() ? "HTTP/1.1 404 Not Found" : "HTTP/1.1 405 Method Not Allowed") +
                             "\r\nContent-Type: application/json\r\nConnection: close\r\n" +
                             (allow.empty() ? "" : "Allow: " + allow + "\r\n") +
                             "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ::send(sock, answer.data(), answer.size(), MSG_NOSIGNAL);
  return true;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  const int64_t read_ms = read_timeout_sec_ * 1000 + read_timeout_usec_ / 1000;
  const int64_t write_ms = write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000;
  bool ret = false;
  for (size_t count = keep_alive_max_count_; count > 0 && svr_sock_ != INVALID_SOCKET; --count) {
    // The next request (the first one too) must start within the keep-alive timeout: one sleeping poll().
    if (!wait_for(sock, POLLIN, keep_alive_timeout_sec_ * 1000)) break;
    if (refused_unknown_method(sock)) break;
    DeadlineStream strm(sock, read_ms, write_ms, Clock::now() + std::chrono::seconds(request_timeout_s_));
    bool connection_closed = false;
    t_close_after_answer = false;
    ret = process_request(strm, count == 1, connection_closed, nullptr);
    if (!ret || connection_closed || t_close_after_answer) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

}  // namespace medseg::serve
