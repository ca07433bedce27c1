// The byte memory model: a hand-simulated tiny U-Net, parameter counts of real networks (counted
// by PyTorch, reference notes), precision/batch/optimizer rules, and SwinUNETR saved-tensor sizes
// against the CPU measurements in the reference notes.
#include <gtest/gtest.h>

#include "planning/memory_model.h"
#include "plans/plans.h"

using namespace medseg;
using namespace medseg::planning;

namespace {

ArchitecturePlan tiny_unet(bool inplace = true) {
  const json k = {{"n_stages", 2},
                  {"features_per_stage", {4, 8}},
                  {"conv_op", "torch.nn.modules.conv.Conv2d"},
                  {"kernel_sizes", {{3, 3}, {3, 3}}},
                  {"strides", {{1, 1}, {2, 2}}},
                  {"n_conv_per_stage", {1, 1}},
                  {"n_conv_per_stage_decoder", {1}},
                  {"conv_bias", true},
                  {"norm_op_kwargs", {{"eps", 1e-5}, {"affine", true}}},
                  {"nonlin_kwargs", {{"inplace", inplace}}}};
  return architecture_from_json({{"network_class_name", "x.PlainConvUNet"}, {"arch_kwargs", k}}, "tiny");
}

ArchitecturePlan resenc_m_like() {
  const json k = {{"n_stages", 6},
                  {"features_per_stage", {32, 64, 128, 256, 320, 320}},
                  {"conv_op", "torch.nn.modules.conv.Conv3d"},
                  {"kernel_sizes", 3},
                  {"strides", {1, 2, 2, 2, 2, 2}},
                  {"n_blocks_per_stage", {1, 3, 4, 6, 6, 6}},
                  {"n_conv_per_stage_decoder", {1, 1, 1, 1, 1}},
                  {"conv_bias", true},
                  {"norm_op_kwargs", {{"eps", 1e-5}, {"affine", true}}},
                  {"nonlin_kwargs", {{"inplace", true}}}};
  return architecture_from_json({{"network_class_name", "x.ResidualEncoderUNet"}, {"arch_kwargs", k}}, "resenc");
}

ArchitecturePlan swin(int f, bool ckpt) {
  return architecture_from_json(
      {{"network_class_name", "medseg.SwinUNETR"}, {"arch_kwargs", {{"feature_size", f}, {"use_checkpoint", ckpt}}}},
      "swin");
}

MemoryOptions fp32() {
  MemoryOptions m;
  m.amp = false;
  return m;
}

constexpr double GiB = 1073741824.0;

}  // namespace

// 2D, 2 stages (4, 8 features), one conv per stage, 2 classes, 8x8 patch, batch 1, fp32, SGD.
// Hand simulation (bytes):
//   params: enc0 1*4*9+4+8=48, enc1 4*8*9+8+16=312, transp 8*4*4+4=132, dec conv 8*4*9+4+8=300,
//   head 4*2+2=10 -> 802; weights = grads = momentum = 3208.
//   saved: enc0 2*4*4*64=2048, enc1 2*4*8*16=1024, concat 4*8*64=2048, dec conv 2048, logits 512;
//   loss 64*2*(4+4+1)=1152. input 256 + target 256.
//   forward peak at the loss: 6416 + 512 + 7680 + 1152 + work 64*(2*4+8)=1024 = 16784.
//   backward peak at the decoder conv: live 14096 + its grads 1200 + head grads 40 + work
//   max(2 * 4*4*64 (LeakyReLU: incoming + input gradient), 4*4*64 + 4*8*64 (conv)) = 3072 -> 18408.
//   step: weights + momentum 6416 + grads 3208 + batch 512 + 2 temporaries of the largest tensor
//   (the 8*4*9 = 4*8*9 = 288-element convs) 2*4*288 = 2304 -> 12440.
TEST(PlanningMemory, TinyUNetHandSimulation) {
  const MemoryEstimate e = estimate_training_memory(tiny_unet(), {8, 8}, 1, 1, 2, fp32());
  EXPECT_EQ(e.parameters, 802);
  EXPECT_EQ(e.weights_bytes, 3208);
  EXPECT_EQ(e.optimizer_bytes, 3208);
  EXPECT_EQ(e.input_bytes, 512);
  EXPECT_EQ(e.activation_bytes, 7680);
  EXPECT_EQ(e.loss_bytes, 1152);
  EXPECT_EQ(e.peak_forward, 16784);
  EXPECT_EQ(e.peak_backward, 18408);
  EXPECT_EQ(e.peak_step, 12440);
  EXPECT_EQ(e.peak_bytes, 18408);
  EXPECT_EQ(e.peak_phase, "backward");
  EXPECT_EQ(e.peak_layer, "decoder.0.0");
  const json j = e.to_json(true);
  EXPECT_EQ(j["estimated_peak_bytes"], 18408);
  EXPECT_EQ(j["breakdown"]["saved_activations"], 7680);
  EXPECT_EQ(j["layers"].size(), e.layers.size());
}

TEST(PlanningMemory, NonInplaceActivationKeepsAThirdTensor) {
  // One extra conv-sized tensor per conv block: 4*4*64 + 4*8*16 + 4*4*64 = 2560 bytes.
  const auto a = estimate_training_memory(tiny_unet(true), {8, 8}, 1, 1, 2, fp32());
  const auto b = estimate_training_memory(tiny_unet(false), {8, 8}, 1, 1, 2, fp32());
  EXPECT_EQ(b.activation_bytes - a.activation_bytes, 2560);
}

TEST(PlanningMemory, DropoutKeepsABoolMaskPerConvBlock) {
  // One byte per conv output element: 4*64 + 8*16 + 4*64 = 640 bytes.
  ArchitecturePlan with = tiny_unet();
  with.dropout_op = "torch.nn.modules.dropout.Dropout3d";
  with.dropout_op_kwargs = {{"p", 0.2}};
  const auto a = estimate_training_memory(tiny_unet(), {8, 8}, 1, 1, 2, fp32());
  const auto b = estimate_training_memory(with, {8, 8}, 1, 1, 2, fp32());
  EXPECT_EQ(b.activation_bytes - a.activation_bytes, 640);
}

TEST(PlanningMemory, ParameterCountsOfRealNetworks) {
  // Counted by PyTorch (reference notes): ResEnc-M-like 3D net, 1 input channel, 3 classes.
  EXPECT_EQ(estimate_training_memory(resenc_m_like(), {64, 64, 64}, 1, 1, 3).parameters, 102350575);
  // MONAI SwinUNETR, feature size 48, 1 input channel, 14 outputs: 62,187,296, Swin part 8,062,002.
  const auto s = estimate_training_memory(swin(48, false), {64, 64, 64}, 1, 1, 14);
  EXPECT_EQ(s.parameters, 62187296);
  int64_t swin_part = 0;
  for (const auto& l : s.layers)
    if (l.name.rfind("swin.", 0) == 0) swin_part += l.params;
  EXPECT_EQ(swin_part, 8062002);
}

TEST(PlanningMemory, AmpHalvesUNetActivationsPlusAHalfInputCopy) {
  MemoryOptions amp;
  const auto h = estimate_training_memory(resenc_m_like(), {64, 64, 64}, 2, 1, 3, amp);
  const auto f = estimate_training_memory(resenc_m_like(), {64, 64, 64}, 2, 1, 3, fp32());
  EXPECT_EQ(h.activation_bytes, f.activation_bytes / 2 + 2 * 2 * 64 * 64 * 64);
  EXPECT_EQ(h.half_weight_bytes > 0, true);
  EXPECT_EQ(f.half_weight_bytes, 0);
  EXPECT_EQ(h.loss_bytes, f.loss_bytes);  // softmax / log-softmax stay fp32
}

TEST(PlanningMemory, BatchScalesActivationsAndOptimizerScalesState) {
  const auto b1 = estimate_training_memory(resenc_m_like(), {64, 64, 64}, 1, 1, 3);
  const auto b3 = estimate_training_memory(resenc_m_like(), {64, 64, 64}, 3, 1, 3);
  EXPECT_EQ(b3.activation_bytes, 3 * b1.activation_bytes);
  EXPECT_EQ(b3.weights_bytes, b1.weights_bytes);
  MemoryOptions adam;
  adam.optimizer = OptimizerKind::AdamW;
  const auto a = estimate_training_memory(resenc_m_like(), {64, 64, 64}, 1, 1, 3, adam);
  EXPECT_EQ(b1.optimizer_bytes, 4 * 102350575LL);
  EXPECT_EQ(a.optimizer_bytes, 8 * 102350575LL);
  EXPECT_EQ(a.peak_backward - b1.peak_backward, 4 * 102350575LL);  // state is held throughout
  // LibTorch's SGD and AdamW both make two temporaries of the largest tensor: only the state differs.
  EXPECT_EQ(a.peak_step - b1.peak_step, 4 * 102350575LL);
}

// CPU autocast (LibTorch 1.13) on the tiny U-Net, batch 1, 8x8, 2 classes: the transposed conv runs in
// fp32 and keeps an fp32 copy of its 8-channel 4x4 input (4*8*16 = 512 bytes) instead of a half copy
// of its 132 weights (2*132 = 264); softmax stays bf16 (2 instead of 4 bytes * 2 classes * 64 voxels).
TEST(PlanningMemory, CpuAutocastRunsTransposedConvInFp32) {
  MemoryOptions cuda, cpu;
  cpu.device = StepDevice::Cpu;
  const auto g = estimate_training_memory(tiny_unet(), {8, 8}, 1, 1, 2, cuda);
  const auto c = estimate_training_memory(tiny_unet(), {8, 8}, 1, 1, 2, cpu);
  EXPECT_EQ(c.activation_bytes - g.activation_bytes, 512);
  EXPECT_EQ(g.half_weight_bytes - c.half_weight_bytes, 264);
  EXPECT_EQ(g.loss_bytes - c.loss_bytes, 2 * 2 * 64);
  cpu.cpu_autocast_fp32_transposed_conv = false;  // LibTorch 2.x lists it with the convolutions
  const auto c2 = estimate_training_memory(tiny_unet(), {8, 8}, 1, 1, 2, cpu);
  EXPECT_EQ(c2.activation_bytes, g.activation_bytes);
  EXPECT_EQ(c2.half_weight_bytes, g.half_weight_bytes);
}

TEST(PlanningMemory, DeepSupervisionAddsHeadsAndLossTerms) {
  MemoryOptions no_ds;
  no_ds.deep_supervision = false;
  const auto ds = estimate_training_memory(resenc_m_like(), {64, 64, 64}, 1, 1, 3);
  const auto plain = estimate_training_memory(resenc_m_like(), {64, 64, 64}, 1, 1, 3, no_ds);
  // Loss terms at 64^3 only vs 64^3, 32^3, 16^3, 8^3 (the 4^3 head has weight 0): 9 bytes * 3 classes.
  EXPECT_EQ(plain.loss_bytes, 9 * 3 * 262144LL);
  EXPECT_EQ(ds.loss_bytes, 9 * 3 * (262144LL + 32768 + 4096 + 512));
}

TEST(PlanningMemory, SwinSavedTensorsMatchCpuMeasurements) {
  // Reference notes, MONAI 1.3 on CPU, fp32, batch 1, 1 channel: saved tensors without
  // checkpointing 1.11 GiB (F=24, 64^3), 4.74 GiB (F=48, 96^3), 7.64 GiB (F=24, 128^3).
  struct Case {
    int f, size;
    double gib;
  };
  for (const Case c : {Case{24, 64, 1.11}, Case{48, 96, 4.74}, Case{24, 128, 7.64}}) {
    const auto e = estimate_training_memory(swin(c.f, false), {c.size, c.size, c.size}, 1, 1, 2, fp32());
    EXPECT_NEAR(e.activation_bytes / GiB, c.gib, 0.1 * c.gib) << c.f << " " << c.size;
  }
}

TEST(PlanningMemory, CheckpointingTradesSavedTensorsForRecompute) {
  const auto off = estimate_training_memory(swin(24, false), {128, 128, 128}, 1, 1, 2, fp32());
  const auto on = estimate_training_memory(swin(24, true), {128, 128, 128}, 1, 1, 2, fp32());
  EXPECT_TRUE(on.checkpointing);
  EXPECT_LT(on.activation_bytes, 0.5 * off.activation_bytes);  // measured: 7.64 -> 2.78 GiB
  EXPECT_GT(on.recompute_bytes, 0);
  EXPECT_LT(on.peak_bytes, off.peak_bytes);
  MemoryOptions force_off = fp32();
  force_off.checkpointing = false;
  EXPECT_EQ(estimate_training_memory(swin(24, true), {128, 128, 128}, 1, 1, 2, force_off).activation_bytes,
            off.activation_bytes);
}

TEST(PlanningMemory, MaxBatchIsTheLargestThatFits) {
  const auto arch = resenc_m_like();
  const std::vector<int> p{64, 64, 64};
  const double budget = 8 * GiB;
  const int b = max_batch_for_budget(arch, p, 1, 3, {}, budget);
  ASSERT_GE(b, 1);
  EXPECT_LE(estimate_training_memory(arch, p, b, 1, 3).peak_bytes, budget);
  EXPECT_GT(estimate_training_memory(arch, p, b + 1, 1, 3).peak_bytes, budget);
  EXPECT_EQ(max_batch_for_budget(arch, p, 1, 3, {}, 1e6), 0);
}
