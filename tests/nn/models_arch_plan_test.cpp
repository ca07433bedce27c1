// arch_kwargs have one reader, planning::architecture_from_json: what the planner and the memory
// model see (ArchitecturePlan) is what models::build_network builds. Rows are the keys whose
// defaults the two readers used to disagree on, or that only one of them read.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/error.h"
#include "models/network.h"
#include "nn/models_test_util.h"
#include "plans/plans.h"

using namespace medseg;
using nlohmann::json;

namespace {

json small_unet() {
  const test::Shapes k(2, {3, 3, 3}), s{{1, 1, 1}, {2, 2, 2}};
  return test::unet_arch("PlainConvUNet", 3, {4, 8}, k, s, {1, 1}, {1});
}

bool has_parameter(const torch::nn::Module& m, const std::string& name) {
  return m.named_parameters(true).find(name) != nullptr;
}

}  // namespace

TEST(ModelsArchPlan, NormAffineFollowsTorchDefaultsInPlanAndNetwork) {
  struct Row {
    const char* name;
    const char* norm_op;
    bool affine;  // torch: InstanceNorm affine=False, BatchNorm affine=True
  };
  const Row rows[] = {{"instance", "torch.nn.modules.instancenorm.InstanceNorm3d", false},
                      {"batch", "torch.nn.modules.batchnorm.BatchNorm3d", true}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    json arch = small_unet();
    arch["arch_kwargs"]["norm_op"] = r.norm_op;
    arch["arch_kwargs"]["norm_op_kwargs"] = {{"eps", 1e-5}};  // no "affine"
    EXPECT_EQ(planning::architecture_from_json(arch, "plans.json").norm_affine, r.affine);
    auto net = models::build_network(arch, 1, 2);
    EXPECT_EQ(has_parameter(*net, "encoder.stages.0.0.convs.0.norm.weight"), r.affine);
  }
}

TEST(ModelsArchPlan, DropoutWithoutPIsTorchsHalf) {
  json arch = small_unet();
  arch["arch_kwargs"]["dropout_op"] = "torch.nn.modules.dropout.Dropout3d";
  arch["arch_kwargs"]["dropout_op_kwargs"] = json::object();
  EXPECT_EQ(planning::architecture_from_json(arch, "plans.json").dropout_p, 0.5);
  std::ostringstream printed;
  printed << *models::build_network(arch, 1, 2);
  EXPECT_NE(printed.str().find("dropout=0.5"), std::string::npos) << printed.str();
}

TEST(ModelsArchPlan, SwinFeatureSizeDefaultIsMonaisInPlanAndNetwork) {
  const json arch = {{"network_class_name", "medseg.SwinUNETR"}, {"arch_kwargs", json::object()}};
  EXPECT_EQ(planning::architecture_from_json(arch, "plans.json").swin->feature_size, 24);
  auto net = models::build_network(arch, 1, 2);
  EXPECT_EQ(net->named_parameters(true)["swinViT.patch_embed.proj.weight"].size(0), 24);
}

TEST(ModelsArchPlan, UnbuiltBlocksAreRefused) {
  const std::pair<const char*, json> rows[] = {
      {"block", {{"block", "dynamic_network_architectures.building_blocks.residual.BottleneckD"}}},
      {"stem_channels", {{"stem_channels", 7}}},
      {"nonlin_first", {{"nonlin_first", true}}},
  };
  for (const auto& [name, extra] : rows) {
    SCOPED_TRACE(name);
    const test::Shapes k(2, {3, 3, 3}), s{{1, 1, 1}, {2, 2, 2}};
    json arch = test::unet_arch("ResidualEncoderUNet", 3, {4, 8}, k, s, {1, 1}, {1});
    arch["arch_kwargs"].update(extra);
    EXPECT_THROW(models::build_network(arch, 1, 2), Error);
  }
}

// The networks nnU-Net builds by name (get_network_via_name.py), which plans made from nnssl checkpoints name with
// arch_kwargs null: their parameters equal dynamic-network-architectures' PrimusM(1, 4, (8, 8, 8), (64, 64, 64))
// and get_network_from_name("ResEncL", 1, 4) (counted in Python: 145,860,548 and 102,351,380).
TEST(ModelsArchPlan, NetworksNamedByNnsslPresetsHaveDynamicNetworkArchitecturesParameters) {
  planning::ArchitecturePlan primus = planning::architecture_from_json(
      {{"network_class_name", "PrimusM"}, {"arch_kwargs", nullptr}, {"_kw_requires_import", nullptr}}, "plans.json");
  ASSERT_TRUE(primus.primus);
  primus.primus->input_shape = {64, 64, 64};  // the configuration's patch size, as the plans reader sets it
  EXPECT_EQ(models::build_network_from_plan(primus, 1, 4)->parameter_count(), 145860548);
  const auto resenc =
      models::build_network({{"network_class_name", "ResEncL"}, {"arch_kwargs", nullptr}}, 1, 4, {}, "plans.json");
  EXPECT_EQ(resenc->class_name(), "ResidualEncoderUNet");
  EXPECT_EQ(resenc->parameter_count(), 102351380);
  EXPECT_THROW(planning::architecture_from_json({{"network_class_name", "PrimusXL"}, {"arch_kwargs", nullptr}}, "p"),
               Error);
}
