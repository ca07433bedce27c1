#include "distributed/advertised_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"

namespace medseg::distributed {
namespace {

std::string numeric(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (getnameinfo(sa, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return host;
}

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string AdvertisedAddress::describe() const {
  if (from_environment) return "interface " + interface + " (GLOO_SOCKET_IFNAME)";
  return address + (interface.empty() ? "" : " (" + interface + ")");
}

std::string interface_holding(const std::string& address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(list, &freeifaddrs);
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    const socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (numeric(i->ifa_addr, len) == address) return i->ifa_name;
  }
  return "";
}

AdvertisedAddress local_address_toward(const std::string& master_addr, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;  // IPv4 answers are tried first below ("localhost" stays 127.0.0.1)
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port > 0 ? port : 29500);
  const int rc = getaddrinfo(master_addr.c_str(), service.c_str(), &hints, &found);
  MEDSEG_CHECK(rc == 0, "MASTER_ADDR ", master_addr, " does not resolve: ", gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
  std::vector<const addrinfo*> candidates;
  for (const int family : {AF_INET, AF_INET6})
    for (const addrinfo* a = found; a; a = a->ai_next)
      if (a->ai_family == family) candidates.push_back(a);
  std::string last_error = "no address";
  for (const addrinfo* a : candidates) {
    FdCloser s{::socket(a->ai_family, SOCK_DGRAM, 0)};
    if (s.fd < 0) continue;
    // connect() on a UDP socket only picks the route and the source address; nothing is sent.
    if (::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
      last_error = std::strerror(errno);
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    AdvertisedAddress out;
    out.address = numeric(reinterpret_cast<sockaddr*>(&local), len);
    if (out.address.empty()) continue;
    out.interface = interface_holding(out.address);
    return out;
  }
  throw Error("MASTER_ADDR " + master_addr + ": no route from this host (" + last_error + ")");
}

AdvertisedAddress advertised_address(const std::string& master_addr, int port) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    AdvertisedAddress out;
    out.interface = ifname;
    out.from_environment = true;
    return out;
  }
  return local_address_toward(master_addr, port);
}

}  // namespace medseg::distributed
