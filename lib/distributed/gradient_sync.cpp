#define MEDSEG_TORCH_COMPAT_REDUCER  // core/torch_compat.h: make_reducer
#include "distributed/gradient_sync.h"

#include "core/error.h"
#include "core/torch_compat.h"
#include "core/strings.h"
#include "distributed/backend.h"

namespace medseg::distributed {

namespace {
constexpr size_t kFirstBucketBytes = 1u << 20;  // PyTorch DDP's defaults
constexpr size_t kBucketBytes = 25u << 20;
}  // namespace

struct GradientSync::Impl {
  std::unique_ptr<c10d::Reducer> reducer;
  ProcessGroup::Backend* backend = nullptr;
};

GradientSync::GradientSync(const std::vector<at::Tensor>& params, const std::vector<std::string>& names,
                           ProcessGroup& group)
    : impl_(std::make_unique<Impl>()) {
  impl_->backend = &group.backend();
  const std::vector<bool> sparse(params.size(), false);
  // Reversed, as DDP does: gradients become ready roughly from the last layer to the first.
  std::vector<int64_t> order(params.size());
  for (size_t i = 0; i < params.size(); ++i) order[i] = static_cast<int64_t>(params.size() - 1 - i);
  auto [buckets, limits] =
      c10d::compute_bucket_assignment_by_size(params, {kFirstBucketBytes, kBucketBytes}, sparse, order);
  std::unordered_map<size_t, std::string> param_names;
  for (size_t i = 0; i < names.size(); ++i) param_names[i] = names[i];
  try {
    impl_->reducer = compat::make_reducer(params, std::move(buckets), std::move(limits),
                                          group.backend().group_ptr_for(params.empty() ? at::Tensor() : params.front()),
                                          sparse, static_cast<int64_t>(kBucketBytes), /*find_unused=*/true,
                                          std::move(param_names), static_cast<int64_t>(kFirstBucketBytes));
  } catch (const std::exception& e) { impl_->backend->fail("setting up gradient buckets", e); }
}

GradientSync::~GradientSync() = default;

void GradientSync::before_forward() { impl_->reducer->prepare_for_forward(); }

void GradientSync::backward(const at::Tensor& loss) {
  try {
    impl_->reducer->prepare_for_backward({loss});
    loss.backward();
  } catch (const std::exception& e) { impl_->backend->fail("the gradient all-reduce", e); }
}

}  // namespace medseg::distributed
