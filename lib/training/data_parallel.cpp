#include "training/data_parallel.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <cstdio>

#include "core/digest.h"
#include "core/error.h"
#include "distributed/gradient_sync.h"
#include "distributed/halo.h"
#include "distributed/process_group.h"
#include "distributed/same_everywhere.h"

namespace medseg::training {

DataParallel::DataParallel(std::shared_ptr<distributed::ProcessGroup> group, int64_t global_batch, int spatial_axis)
    : group_(std::move(group)), batch_(global_batch) {
  if (group_ && group_->size() == 1) group_.reset();
  if (group_ && spatial_axis >= 0) {
    spatial_axis_ = spatial_axis;
    share_ = {0, global_batch};  // every rank draws the whole batch and keeps its slabs
    return;
  }
  MEDSEG_CHECK(!group_ || global_batch >= group_->size(), "the plan's batch size ", global_batch,
               " is smaller than the ", group_->size(),
               " ranks: every rank needs at least one sample of the global batch");
  share_ = data::batch_share(global_batch, rank(), size());
}

DataParallel::~DataParallel() = default;
DataParallel::DataParallel(DataParallel&&) noexcept = default;
DataParallel& DataParallel::operator=(DataParallel&&) noexcept = default;

bool DataParallel::writer() const { return rank() == 0; }
int DataParallel::rank() const { return group_ ? group_->rank() : 0; }
int DataParallel::size() const { return group_ ? group_->size() : 1; }
int64_t DataParallel::largest_share() const { return spatial_axis_ >= 0 ? batch_ : (batch_ + size() - 1) / size(); }

double DataParallel::loss_weight() const {
  if (spatial_axis_ >= 0) return 1.0;  // the whole batch's loss on every rank
  return static_cast<double>(share_.size()) * size() / static_cast<double>(batch_);
}

BatchSumFn DataParallel::batch_sum() const {
  if (!group_ || spatial_axis_ >= 0) return {};
  distributed::ProcessGroup* g = group_.get();
  return [g](const at::Tensor& t) { return distributed::all_reduce_sum_with_grad(t, g); };
}

BatchSumFn DataParallel::spatial_sum() const {
  if (!group_ || spatial_axis_ < 0) return {};
  distributed::ProcessGroup* g = group_.get();
  return [g](const at::Tensor& t) { return distributed::all_reduce_sum_with_grad(t, g); };
}

at::Tensor DataParallel::slab(const at::Tensor& t) const {
  if (!group_ || spatial_axis_ < 0) return t;
  return distributed::spatial_slab(t, spatial_axis_, rank(), size());
}

void DataParallel::synchronise(torch::nn::Module& model, const std::vector<at::Tensor>& params) {
  if (!group_) return;
  std::vector<at::Tensor> state;
  for (const auto& p : model.parameters()) state.push_back(p);
  for (const auto& b : model.buffers()) state.push_back(b);
  group_->broadcast(state, 0);
  check_same("weights after the broadcast from rank 0", weights_digest(model));
  if (sync_) return;
  std::vector<std::string> names;
  for (const auto& kv : model.named_parameters()) names.push_back(kv.key());
  if (names.size() != params.size()) names.clear();
  sync_ = std::make_unique<distributed::GradientSync>(params, names, *group_);
}

void DataParallel::before_forward() {
  if (sync_) sync_->before_forward();
}

void DataParallel::backward(const at::Tensor& scaled_loss) {
  if (sync_) return sync_->backward(scaled_loss);
  scaled_loss.backward();
}

double DataParallel::batch_mean(double value) const {
  if (spatial_axis_ >= 0) return value;  // already the whole batch's on every rank
  const double mine = value * static_cast<double>(share_.size()) / static_cast<double>(batch_);
  if (!group_) return mine;
  at::Tensor t = at::full({1}, mine, at::kDouble);
  group_->all_reduce_sum(t);
  return t.item<double>();
}

DiceCounts DataParallel::sum(const DiceCounts& counts) const {
  if (!group_) return counts;
  const int64_t n = static_cast<int64_t>(counts.tp.size());
  at::Tensor t = at::empty({3, n}, at::kLong);
  for (int64_t c = 0; c < n; ++c) {
    t[0][c] = counts.tp[static_cast<size_t>(c)];
    t[1][c] = counts.fp[static_cast<size_t>(c)];
    t[2][c] = counts.fn[static_cast<size_t>(c)];
  }
  group_->all_reduce_sum(t);
  DiceCounts out = counts;
  for (int64_t c = 0; c < n; ++c) {
    out.tp[static_cast<size_t>(c)] = t[0][c].item<int64_t>();
    out.fp[static_cast<size_t>(c)] = t[1][c].item<int64_t>();
    out.fn[static_cast<size_t>(c)] = t[2][c].item<int64_t>();
  }
  return out;
}

bool DataParallel::agree_to_stop(bool local) const {
  if (!group_) return local;
  at::Tensor t = at::full({1}, local ? 1.0 : 0.0, at::kDouble);
  group_->all_reduce_sum(t);
  return t.item<double>() > 0;
}

void DataParallel::check_same(const std::string& what, const std::string& value) const {
  if (!group_) return;
  const auto all = group_->all_gather(value);
  for (size_t r = 1; r < all.size(); ++r)
    MEDSEG_CHECK(all[r] == all[0], "rank ", r, " differs from rank 0 in its ", what, " (", all[r], " vs ", all[0],
                 "): every rank must run the same command on the same data");
}

void DataParallel::check_same_cases(const std::vector<std::string>& cases) const {
  if (group_)
    distributed::check_same_lines(*group_, cases, "trains on other data than", "case",
                                  "every rank must read the same preprocessed data");
}

std::vector<std::string> DataParallel::my_cases(const std::vector<std::string>& ids) const {
  std::vector<std::string> out;
  for (size_t i = static_cast<size_t>(rank()); i < ids.size(); i += static_cast<size_t>(size())) out.push_back(ids[i]);
  return out;
}

void DataParallel::barrier(std::chrono::seconds timeout) const {
  if (group_) group_->barrier(timeout);
}

std::string weights_digest(const torch::nn::Module& model) {
  uint64_t h = kFnv1aSeed;
  const auto mix = [&h](const at::Tensor& t) {
    const at::Tensor c = t.detach().to(at::kCPU).contiguous();
    h = fnv1a(c.data_ptr(), c.nbytes(), h);
  };
  for (const auto& kv : model.named_parameters()) mix(kv.value());
  for (const auto& kv : model.named_buffers()) mix(kv.value());
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace medseg::training
