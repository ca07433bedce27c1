#pragma once
// The address a rank advertises to the others for Gloo's connections. Gloo's default is whatever the
// host name resolves to, which on a default Debian or Ubuntu install is 127.0.1.1 (/etc/hosts): every
// rank then tells the others to connect to its loopback, and a run across hosts times out. The rule
// here is what a user expects without knowing Gloo:
//   1. GLOO_SOCKET_IFNAME, when set (as in PyTorch): that interface;
//   2. otherwise the local address of the route to MASTER_ADDR, i.e. the address a socket connected to
//      the master gets; this is loopback only when the master is on this host's loopback.
// No torch: the choice is made, and tested, apart from c10d.
#include <string>

namespace medseg::distributed {

struct AdvertisedAddress {
  std::string address;            // numeric IPv4 or IPv6 address ("" when `interface_name` is given instead)
  std::string interface;          // the interface holding it, "" when unknown
  bool from_environment = false;  // true: GLOO_SOCKET_IFNAME named `interface`
  std::string describe() const;   // "10.77.0.2 (veth1)" / "interface eth0 (GLOO_SOCKET_IFNAME)"
};

// Resolves `master_addr` and asks the kernel for the source address of a route to it (a UDP socket
// connected to master_addr:port sends nothing). Error naming MASTER_ADDR when it does not resolve or
// no route leads there.
AdvertisedAddress local_address_toward(const std::string& master_addr, int port);

// The rule above: GLOO_SOCKET_IFNAME from the environment, else local_address_toward().
AdvertisedAddress advertised_address(const std::string& master_addr, int port);

// The interface that holds `address` on this host ("" when none does).
std::string interface_holding(const std::string& address);

}  // namespace medseg::distributed
