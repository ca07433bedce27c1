#define MEDSEG_TORCH_COMPAT_C10D  // core/torch_compat.h: make_nccl_group
#include "distributed/process_group.h"

#include <c10/core/InferenceMode.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/torch_compat.h"
#include "distributed/advertised_address.h"
#include "distributed/backend.h"
#include "distributed/rendezvous.h"

namespace medseg::distributed {
namespace {

// The address this rank advertises (distributed/advertised_address.h), logged so that a user sees
// which interface carries the run.
std::shared_ptr<::gloo::transport::Device> gloo_device(const World& w, const AdvertisedAddress& a) {
  if (w.distributed()) spdlog::info("{}: Gloo on {}", w.label(), a.describe());
  if (a.from_environment) return c10d::ProcessGroupGloo::createDeviceForInterface(a.interface);
  return c10d::ProcessGroupGloo::createDeviceForHostname(a.address);
}

// Gloo connects the ranks with what is left of the join's deadline (at least a second, for the
// connections themselves), so that a rank that cannot join gives up after one --dist-timeout;
// its collectives then get the whole timeout again. LibTorch before 2.6 cannot change a Gloo
// group's timeout after it connected: there the connections get a whole timeout of their own.
std::chrono::milliseconds gloo_connect_timeout(Deadline deadline, std::chrono::milliseconds timeout) {
#if MEDSEG_TORCH_AT_LEAST(2, 6)
  (void)timeout;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1000));
#else
  (void)deadline;
  return timeout;
#endif
}

void restore_gloo_timeout(c10d::ProcessGroupGloo& g, std::chrono::milliseconds timeout) {
#if MEDSEG_TORCH_AT_LEAST(2, 6)
  g.setTimeout(timeout);
#else
  (void)g, (void)timeout;
#endif
}

void wait(ProcessGroup::Backend& b, const char* op, const c10::intrusive_ptr<c10d::Work>& work,
          std::chrono::seconds timeout = std::chrono::seconds(0)) {
  try {
    work->wait(std::chrono::duration_cast<std::chrono::milliseconds>(timeout.count() > 0 ? timeout : b.timeout));
  } catch (const std::exception& e) { b.fail(op, e); }
}

// Adds the scope's wall time, one call and `bytes` to a Traffic.
class TrafficScope {
 public:
  TrafficScope(ProcessGroup::Traffic& t, int64_t bytes) : t_(t), start_(std::chrono::steady_clock::now()) {
    t_.calls += 1;
    t_.bytes += bytes;
  }
  ~TrafficScope() { t_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  TrafficScope(const TrafficScope&) = delete;
  TrafficScope& operator=(const TrafficScope&) = delete;

 private:
  ProcessGroup::Traffic& t_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

void ProcessGroup::Backend::fail(const std::string& op, const std::exception& e) const {
  const std::string why = one_line(e.what());
  const auto blamed = blamed_ranks(why, addresses, world.rank);
  const std::string who = blamed.empty() ? "another rank" : rank_list(blamed);
  throw PeerError(concat(world.label(), ": ", op, " failed: ", who, " exited or did not answer within ",
                         timeout.count(), " s (", why, ")"));
}

ProcessGroup::ProcessGroup(std::unique_ptr<Backend> b) : b_(std::move(b)) {}
ProcessGroup::~ProcessGroup() = default;

std::shared_ptr<ProcessGroup> ProcessGroup::connect(const World& world, const ProcessGroupOptions& options) {
  // One deadline for the whole join (rendezvous.h): reaching the store, every rank arriving, Gloo's
  // connections.
  const Deadline deadline = std::chrono::steady_clock::now() + options.timeout;
  auto b = std::make_unique<Backend>();
  b->world = world;
  b->timeout = options.timeout;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout);
  const std::string where = concat(world.master_addr, ":", world.master_port);
  if (world.rank != 0) await_master(world, deadline, options.timeout);
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(world.master_port);
    so.isServer = world.rank == 0;
    so.numWorkers = static_cast<size_t>(world.world_size);
    so.waitWorkers = false;  // await_ranks waits, and names who is missing
    // The master accepts connections (await_master): what is left of the deadline is enough for
    // c10d's connect; later store operations get the whole timeout.
    so.timeout =
        std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()),
                 std::chrono::milliseconds(1000));
    b->store = c10::make_intrusive<c10d::TCPStore>(world.master_addr, so);
    b->store->setTimeout(ms);
  } catch (const std::exception& e) {
    const std::string why = one_line(e.what());
    MEDSEG_CHECK(world.rank != 0, world.label(), ": cannot serve the rendezvous on ", where, " (port in use? ", why,
                 ")");
    throw Error(concat(world.label(), ": cannot reach rank 0's rendezvous on ", where, " within ",
                       options.timeout.count(), " s (", why, ")"));
  }
  const AdvertisedAddress address = advertised_address(world.master_addr, world.master_port);
  b->addresses = await_ranks(*b->store, world, address.address, deadline, options.timeout);
  try {
    auto go = c10d::ProcessGroupGloo::Options::create(gloo_connect_timeout(deadline, ms));
    go->devices.push_back(gloo_device(world, address));
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("gloo", b->store);
    auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, world.rank, world.world_size, go);
    restore_gloo_timeout(*gloo, ms);
    b->cpu = compat::wrap_backend(b->store, world.rank, world.world_size, gloo);
    if (options.cuda) b->cuda = compat::make_nccl_group(b->store, world.rank, world.world_size, ms);
  } catch (const Error&) { throw; } catch (const std::exception& e) {
    b->fail("joining the process group", e);
  }
  return std::shared_ptr<ProcessGroup>(new ProcessGroup(std::move(b)));
}

int ProcessGroup::rank() const { return b_->world.rank; }
int ProcessGroup::size() const { return b_->world.world_size; }
std::chrono::seconds ProcessGroup::timeout() const { return b_->timeout; }
ProcessGroup::Backend& ProcessGroup::backend() { return *b_; }

void ProcessGroup::all_reduce_sum(at::Tensor& t) {
  const TrafficScope timed(traffic_, static_cast<int64_t>(t.nbytes()));
  std::vector<at::Tensor> v{t};
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::SUM;
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = b_->group_for(t).allreduce(v, o);
  } catch (const std::exception& e) { b_->fail("all-reduce", e); }
  wait(*b_, "all-reduce", work);
}

void ProcessGroup::broadcast(std::vector<at::Tensor>& tensors, int root) {
  if (tensors.empty()) return;
  // One flat buffer per call: Gloo broadcasts one tensor per collective, and one message is faster.
  std::vector<at::Tensor> flat_parts;
  for (const auto& t : tensors) flat_parts.push_back(t.detach().reshape({-1}).to(at::kDouble));
  std::vector<at::Tensor> buf{at::cat(flat_parts).to(tensors.front().device())};
  c10d::BroadcastOptions o;
  o.rootRank = root;
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = b_->group_for(buf[0]).broadcast(buf, o);
  } catch (const std::exception& e) { b_->fail("broadcast", e); }
  wait(*b_, "broadcast", work);
  int64_t at_elem = 0;
  at::NoGradGuard no_grad;
  for (auto& t : tensors) {
    t.detach().copy_(buf[0].slice(0, at_elem, at_elem + t.numel()).view(t.sizes()));
    at_elem += t.numel();
  }
}

void ProcessGroup::exchange(std::vector<Transfer>& transfers, int tag) {
  // c10d wants contiguous buffers; a receive into a strided view lands in a buffer and is copied back.
  std::vector<std::vector<at::Tensor>> bufs(transfers.size());
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  const std::string what = "point-to-point exchange";
  int64_t sent = 0;
  for (const auto& t : transfers) sent += t.send ? static_cast<int64_t>(t.tensor.nbytes()) : 0;
  const TrafficScope timed(traffic_, sent);
  try {
    for (size_t i = 0; i < transfers.size(); ++i) {
      const Transfer& t = transfers[i];
      MEDSEG_CHECK(t.peer >= 0 && t.peer < size() && t.peer != rank(), "peer rank ", t.peer, " is not another rank of ",
                   size());
      bufs[i].push_back(t.tensor.is_contiguous() ? t.tensor : t.tensor.contiguous());
      auto& g = b_->group_for(bufs[i][0]);
      works.push_back(t.send ? g.send(bufs[i], t.peer, tag) : g.recv(bufs[i], t.peer, tag));
    }
  } catch (const Error&) { throw; } catch (const std::exception& e) {
    b_->fail(what, e);
  }
  for (auto& w : works) wait(*b_, what.c_str(), w);
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < transfers.size(); ++i)
    if (!transfers[i].send && !bufs[i][0].is_same(transfers[i].tensor)) transfers[i].tensor.copy_(bufs[i][0]);
}

void ProcessGroup::send(const at::Tensor& t, int dst, int tag) {
  std::vector<Transfer> v{{dst, true, t}};
  exchange(v, tag);
}

void ProcessGroup::recv(at::Tensor& t, int src, int tag) {
  std::vector<Transfer> v{{src, false, t}};
  exchange(v, tag);
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& value) {
  // Over Gloo, not through the store: c10d's TCPStore get, once its wait times out, blocks in recv
  // without a timeout for the answer to its "stop waiting" (LibTorch 2.11), so a cut link would hang
  // a rank there for the kernel's TCP time-out instead of --dist-timeout. First the lengths, then
  // the bytes padded to the longest. The buffers are ordinary tensors even when the caller predicts
  // under c10::InferenceMode: LibTorch 1.13's Gloo allgather writes into its outputs in place, which an
  // inference tensor refuses.
  const c10::InferenceMode normal_tensors(false);
  const auto gather = [this](const at::Tensor& mine) {
    std::vector<at::Tensor> in{mine};
    std::vector<std::vector<at::Tensor>> out(1);
    for (int r = 0; r < size(); ++r) out[0].push_back(at::empty_like(mine));
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = b_->cpu->allgather(out, in, c10d::AllgatherOptions());
    } catch (const std::exception& e) { b_->fail("exchanging run settings", e); }
    wait(*b_, "exchanging run settings", work);
    return out[0];
  };
  const auto lengths = gather(at::full({1}, static_cast<int64_t>(value.size()), at::kLong));
  int64_t longest = 1;
  for (const auto& l : lengths) longest = std::max(longest, l.item<int64_t>());
  at::Tensor mine = at::zeros({longest}, at::kByte);
  if (!value.empty()) std::memcpy(mine.data_ptr(), value.data(), value.size());
  const auto bytes = gather(mine);
  std::vector<std::string> out;
  for (int r = 0; r < size(); ++r)
    out.emplace_back(static_cast<const char*>(bytes[static_cast<size_t>(r)].data_ptr()),
                     static_cast<size_t>(lengths[static_cast<size_t>(r)].item<int64_t>()));
  return out;
}

void ProcessGroup::barrier(std::chrono::seconds timeout) {
  c10d::BarrierOptions o;
  if (timeout.count() > 0) o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = b_->cpu->barrier(o);
  } catch (const std::exception& e) { b_->fail("barrier", e); }
  wait(*b_, "barrier", work, timeout);
}

namespace {

struct AllReduceSum : public torch::autograd::Function<AllReduceSum> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& t, ProcessGroup* group) {
    ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
    at::Tensor out = t.clone();
    group->all_reduce_sum(out);
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* group = reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt());
    at::Tensor g = grads[0].clone();
    group->all_reduce_sum(g);
    return {g, at::Tensor()};
  }
};

}  // namespace

at::Tensor all_reduce_sum_with_grad(const at::Tensor& t, ProcessGroup* group) {
  if (!group || group->size() == 1) return t;
  return AllReduceSum::apply(t, group);
}

void agree(ProcessGroup* group, const std::string& what, const std::function<void()>& step, bool rank0_first) {
  if (!group) return step();
  std::string mine;
  const auto run = [&] {
    try {
      step();
    } catch (const std::exception& e) { mine = one_line(e.what()); }
  };
  if (!rank0_first || group->rank() == 0) run();
  std::vector<std::string> first;
  if (rank0_first) {
    first = group->all_gather(mine);
    if (!first[0].empty()) {
      MEDSEG_CHECK(group->rank() != 0, first[0]);
      throw Error(group->backend().world.label() + ": " + what + " failed on rank 0: " + first[0]);
    }
    if (group->rank() != 0) run();
  }
  const auto all = group->all_gather(mine);
  MEDSEG_CHECK(mine.empty(), mine);
  for (size_t r = 0; r < all.size(); ++r)
    MEDSEG_CHECK(all[r].empty(), group->backend().world.label(), ": ", what, " failed on rank ", r, ": ", all[r]);
}

}  // namespace medseg::distributed
