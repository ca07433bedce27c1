// The address a rank advertises for Gloo (distributed/advertised_address.h), checked against what the
// kernel was told independently: loopback, the addresses `ip` lists, and a veth pair this test makes
// with its peer in a network namespace (root and iproute2 only; skipped otherwise).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "core/error.h"
#include "distributed/advertised_address.h"

using medseg::distributed::advertised_address;
using medseg::distributed::local_address_toward;

namespace {

std::string shell(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, decltype(&pclose)> p(popen((cmd + " 2>/dev/null").c_str(), "r"), &pclose);
  if (!p) return out;
  std::array<char, 512> buf{};
  while (fgets(buf.data(), buf.size(), p.get())) out += buf.data();
  return out;
}

bool can_make_namespaces() { return geteuid() == 0 && std::system("ip netns list >/dev/null 2>&1") == 0; }

// A veth pair 10.77.231.1/24 here, 10.77.231.2/24 in namespace medseg_addr_<pid>; removed on scope exit.
class VethPeer {
 public:
  VethPeer() : ns_("medseg_addr_" + std::to_string(getpid())), here_("msa" + std::to_string(getpid() % 100000)) {
    const std::string peer = here_ + "p";
    ok_ = std::system(("ip netns add " + ns_ + " && ip link add " + here_ + " type veth peer name " + peer +
                       " && ip link set " + peer + " netns " + ns_ + " && ip addr add 10.77.231.1/24 dev " + here_ +
                       " && ip link set " + here_ + " up && ip netns exec " + ns_ + " ip addr add 10.77.231.2/24 dev " +
                       peer + " && ip netns exec " + ns_ + " ip link set " + peer + " up")
                          .c_str()) == 0;
  }
  ~VethPeer() { std::system(("ip link del " + here_ + " 2>/dev/null; ip netns del " + ns_ + " 2>/dev/null").c_str()); }
  bool ok() const { return ok_; }
  const std::string& interface() const { return here_; }

 private:
  std::string ns_, here_;
  bool ok_ = false;
};

}  // namespace

TEST(AdvertisedAddress, LoopbackMasterGivesLoopback) {
  const auto a = local_address_toward("127.0.0.1", 29500);
  EXPECT_EQ(a.address, "127.0.0.1");
  EXPECT_EQ(a.interface, "lo");
  // "localhost" may resolve to ::1 first; the IPv4 answer is preferred, as Gloo's default was.
  EXPECT_EQ(local_address_toward("localhost", 29500).address, "127.0.0.1");
}

TEST(AdvertisedAddress, EveryAddressOfThisHostRoutesToItself) {
  // `ip -4 -o addr` lines: "2: eth0    inet 10.0.0.5/24 brd ...".
  std::istringstream lines(shell("ip -4 -o addr show"));
  int checked = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string idx, ifname, inet, cidr;
    f >> idx >> ifname >> inet >> cidr;
    if (inet != "inet") continue;
    const std::string addr = cidr.substr(0, cidr.find('/'));
    SCOPED_TRACE(line);
    const auto a = local_address_toward(addr, 29500);
    EXPECT_EQ(a.address, addr);
    EXPECT_EQ(a.interface, ifname);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "`ip -4 -o addr` listed nothing";
}

TEST(AdvertisedAddress, RemoteMasterGivesTheRoutesSourceNotLoopback) {
  // Like the second host of docs/distributed.md: the master is across a link, and whatever the host
  // name resolves to (127.0.1.1 on a default install), the advertised address is this end of the link.
  if (!can_make_namespaces()) GTEST_SKIP() << "needs root and `ip netns`";
  VethPeer link;
  ASSERT_TRUE(link.ok()) << "could not make the veth pair";
  const auto a = local_address_toward("10.77.231.2", 29500);
  EXPECT_EQ(a.address, "10.77.231.1");
  EXPECT_EQ(a.interface, link.interface());
  EXPECT_EQ(a.describe(), "10.77.231.1 (" + link.interface() + ")");
}

TEST(AdvertisedAddress, GlooSocketIfnameWins) {
  ASSERT_EQ(setenv("GLOO_SOCKET_IFNAME", "lo", 1), 0);
  const auto a = advertised_address("10.1.2.3", 29500);
  unsetenv("GLOO_SOCKET_IFNAME");
  EXPECT_TRUE(a.from_environment);
  EXPECT_EQ(a.interface, "lo");
  EXPECT_EQ(a.describe(), "interface lo (GLOO_SOCKET_IFNAME)");
}

TEST(AdvertisedAddress, UnresolvableMasterNamesMasterAddr) {
  try {
    local_address_toward("no-such-host.invalid", 29500);
    FAIL() << "accepted";
  } catch (const medseg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR no-such-host.invalid"), std::string::npos) << e.what();
  }
}
