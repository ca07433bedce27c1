// clone() of every network the factory builds (PlainConvUNet and ResidualEncoderUNet 2d/3d, with
// instance or batch norm and dropout; SwinUNETR v1/v2 2d/3d) and of the blocks that hold medseg's own
// layers: the copy has every parameter and buffer bit for bit in storage of its own, the same module
// types and training modes, and computes the same output. InstanceNorm and the networks were plain
// torch::nn::Modules before: a parent's clone() reset them (a norm weight of 5 came back as 1) and a
// network's clone() threw.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <typeinfo>
#include <vector>

#include "models/layers.h"
#include "models/network.h"
#include "models/onednn_conv.h"
#include "models/unet_blocks.h"
#include "nn/models_test_util.h"

using namespace medseg;
using nlohmann::json;

namespace {

struct Case {
  std::string name;
  json arch;
  int dims;
  int64_t size;  // spatial edge of the test input
};

json unet(const std::string& cls, int dims) {
  const test::Shapes k(3, std::vector<int64_t>(dims, 3));
  test::Shapes s(3, std::vector<int64_t>(dims, 2));
  s[0] = std::vector<int64_t>(dims, 1);
  return test::unet_arch(cls, dims, {4, 8, 16}, k, s, {1, 2, 2}, {1, 1});
}

json swin(int dims, bool v2) {
  return {{"network_class_name", "medseg.SwinUNETR"},
          {"arch_kwargs", {{"feature_size", 12}, {"spatial_dims", dims}, {"use_v2", v2}, {"depths", {1, 1, 1, 1}}}}};
}

std::vector<Case> every_network() {
  std::vector<Case> cases;
  for (int dims : {2, 3}) {
    const std::string d = std::to_string(dims) + "d";
    cases.push_back({"PlainConvUNet " + d, unet("PlainConvUNet", dims), dims, 16});
    cases.push_back({"ResidualEncoderUNet " + d, unet("ResidualEncoderUNet", dims), dims, 16});
    // Batch norm brings buffers (running statistics, num_batches_tracked), dropout one more child.
    json bn = unet("ResidualEncoderUNet", dims);
    bn["arch_kwargs"]["norm_op"] = "torch.nn.modules.batchnorm.BatchNorm" + d;
    bn["arch_kwargs"]["dropout_op"] = "torch.nn.modules.dropout.Dropout" + d;
    bn["arch_kwargs"]["dropout_op_kwargs"] = {{"p", 0.2}};
    cases.push_back({"ResidualEncoderUNet batch norm + dropout " + d, bn, dims, 16});
    cases.push_back({"SwinUNETR " + d, swin(dims, false), dims, 32});
    cases.push_back({"SwinUNETR v2 " + d, swin(dims, true), dims, 32});
  }
  return cases;
}

// Every parameter and buffer gets values no other tensor has (and no initialiser would give).
void fill_distinct(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  double offset = 1.0;
  for (auto& t : m.parameters()) {
    t.copy_(torch::rand_like(t) + offset);
    offset += 1.0;
  }
  for (auto& t : m.buffers()) {
    if (t.is_floating_point())
      t.copy_(torch::rand_like(t) + offset);
    else
      t.fill_(static_cast<int64_t>(offset));
    offset += 1.0;
  }
}

std::vector<std::pair<std::string, torch::Tensor>> tensors(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back("parameter " + p.key(), p.value());
  for (const auto& b : m.named_buffers()) out.emplace_back("buffer " + b.key(), b.value());
  return out;
}

// Same names in the same order, equal bits, dtype and requires_grad, and no shared storage.
void expect_deep_copy(const torch::nn::Module& original, const torch::nn::Module& copy) {
  const auto a = tensors(original), b = tensors(copy);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].first);
    ASSERT_EQ(a[i].first, b[i].first);
    const torch::Tensor &x = a[i].second, &y = b[i].second;
    EXPECT_EQ(x.dtype(), y.dtype());
    EXPECT_EQ(x.requires_grad(), y.requires_grad());
    EXPECT_TRUE(torch::equal(x, y));
    EXPECT_FALSE(x.storage().is_alias_of(y.storage()));
  }
}

// LibTorch's Sequential and ModuleList clone into a new container, in training mode whatever the
// original's; a container's mode changes nothing (its elements keep their own).
bool is_container(const torch::nn::Module& m) {
  return m.as<torch::nn::SequentialImpl>() != nullptr || m.as<torch::nn::ModuleListImpl>() != nullptr;
}

// Same module tree: names, dynamic types (a OneDnnConv3d stays one) and training modes.
void expect_same_modules(const torch::nn::Module& original, const torch::nn::Module& copy) {
  const auto a = original.named_modules(), b = copy.named_modules();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].key());
    ASSERT_EQ(a[i].key(), b[i].key());
    const torch::nn::Module &x = *a[i].value(), &y = *b[i].value();
    EXPECT_EQ(std::string(typeid(x).name()), typeid(y).name());
    if (!is_container(x)) { EXPECT_EQ(x.is_training(), y.is_training()); }
    EXPECT_NE(&x, &y);
  }
}

models::SegmentationNetwork clone_of(const models::SegmentationNetwork& net) {
  auto copy = std::dynamic_pointer_cast<models::SegmentationNetworkImpl>(net->clone());
  EXPECT_TRUE(copy != nullptr);
  return models::SegmentationNetwork(copy);
}

}  // namespace

TEST(ModelsClone, EveryNetworkIsCopiedBitForBitAndComputesTheSame) {
  for (const Case& c : every_network()) {
    SCOPED_TRACE(c.name);
    torch::manual_seed(3);
    models::NetworkBuildOptions o;
    o.deep_supervision = false;  // a state the copy must keep: one output, not one per scale
    auto net = models::build_network(c.arch, 2, 3, o);
    fill_distinct(*net);
    net->eval();  // dropout off, batch norm on its running statistics: forward is deterministic

    auto copy = clone_of(net);
    ASSERT_TRUE(copy);
    EXPECT_EQ(copy->class_name(), net->class_name());
    EXPECT_FALSE(copy->deep_supervision());
    expect_same_modules(*net, *copy);
    expect_deep_copy(*net, *copy);

    std::vector<int64_t> shape{1, 2};
    shape.insert(shape.end(), c.dims, c.size);
    const torch::Tensor x = torch::randn(shape);
    torch::NoGradGuard no_grad;
    const auto y = net->forward(x), y_copy = copy->forward(x);
    ASSERT_EQ(y.size(), 1u);
    ASSERT_EQ(y_copy.size(), 1u);
    EXPECT_TRUE(torch::equal(y[0], y_copy[0]));

    // Changing the copy leaves the original as it was.
    const auto before = tensors(*net);
    std::vector<torch::Tensor> saved;
    for (const auto& t : before) saved.push_back(t.second.clone());
    for (auto& t : copy->parameters()) t.add_(1.0);
    for (auto& t : copy->buffers()) t.add_(1);
    for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(before[i].second, saved[i])) << before[i].first;
    EXPECT_TRUE(torch::equal(net->forward(x)[0], y[0]));
  }
}

TEST(ModelsClone, KeepsTrainingModesPerModule) {
  auto net = models::build_network(unet("PlainConvUNet", 3), 1, 2);
  net->train();
  net->named_modules()["decoder"]->eval();  // a mixed tree: the copy takes each module's own mode
  auto copy = clone_of(net);
  ASSERT_TRUE(copy);
  expect_same_modules(*net, *copy);
  EXPECT_TRUE(copy->is_training());
  EXPECT_FALSE(copy->named_modules()["decoder"]->is_training());
}

TEST(ModelsClone, BlockKeepsItsInstanceNormWeights) {
  // The case that showed the bug: a block's clone() reset its InstanceNorm child.
  models::ConvDropoutNormReLU block(
      models::ConvDropoutNormReLUOptions(2, 4, {3}, models::LayerOptions().dims(3).norm_affine(true)));
  {
    torch::NoGradGuard no_grad;
    block->norm_weight().fill_(5.0);
    block->norm_bias().fill_(-2.0);
  }
  auto copy = std::dynamic_pointer_cast<models::ConvDropoutNormReLUImpl>(block->clone());
  ASSERT_TRUE(copy != nullptr);
  EXPECT_TRUE(torch::equal(copy->norm_weight(), torch::full({4}, 5.0)));
  EXPECT_TRUE(torch::equal(copy->norm_bias(), torch::full({4}, -2.0)));
  expect_deep_copy(*block, *copy);
  expect_same_modules(*block, *copy);
}

TEST(ModelsClone, InstanceNormAndOneDnnConvKeepTheirTypeAndOptions) {
  models::InstanceNorm norm(models::InstanceNormOptions(3).eps(1e-3).affine(true));
  auto norm_copy = std::dynamic_pointer_cast<models::InstanceNormImpl>(norm->clone());
  ASSERT_TRUE(norm_copy != nullptr);
  EXPECT_EQ(norm_copy->options.eps(), 1e-3);
  expect_deep_copy(*norm, *norm_copy);

  const std::vector<int64_t> k{3, 3, 3}, s{1, 1, 1}, pad{1, 1, 1};
  models::OneDnnConv3d conv(int64_t{2}, int64_t{3}, k, s, pad, true);
  auto conv_copy = std::dynamic_pointer_cast<models::OneDnnConv3dImpl>(conv->clone());
  ASSERT_TRUE(conv_copy != nullptr);
  expect_deep_copy(*conv, *conv_copy);
  const torch::Tensor x = torch::randn({1, 2, 5, 5, 5});
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(conv->forward(x), conv_copy->forward(x)));
}
