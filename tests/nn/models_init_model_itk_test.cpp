// medseg_init_model writes the initialisation training starts from (issue 29): nnU-Net's He init of every
// convolution, std = sqrt(2 / (1 + 0.01^2)) / sqrt(fan_in), and with --init torch LibTorch's default,
// kaiming_uniform(a = sqrt(5)): std = 1 / sqrt(3 fan_in), about 0.41x of He. Both are formulas, checked on
// the weights of the checkpoint the command writes.
#include <gtest/gtest.h>

#include <cmath>

#include "checkpoint/checkpoint.h"
#include "support/bad_input.h"

namespace {

using medseg::test::Workspace;

// Mean over the large convolution weights of std(W) / (the He std for W's fan-in).
double std_over_he(const std::string& ckpt) {
  const auto ck = medseg::checkpoint::load_checkpoint(ckpt);
  double sum = 0;
  int n = 0;
  for (const auto& [name, w] : ck.weights) {
    if (w.dim() < 4 || w.numel() < 2000) continue;  // convolutions (2d/3d), large enough for a stable std
    const double fan_in = static_cast<double>(w.size(1) * w[0][0].numel());  // torch's own fan-in rule
    const double he = std::sqrt(2.0 / (1.0 + 1e-4)) / std::sqrt(fan_in);
    sum += w.std().item<double>() / he;
    ++n;
  }
  EXPECT_GT(n, 3) << "no convolution weights in " << ckpt;
  return n ? sum / n : 0;
}

}  // namespace

TEST(InitModel, WritesTheTrainingInitialisationOrTorchsOnRequest) {
  Workspace ws(Workspace::Parts{false, false});
  auto r = ws.run("medseg_init_model", "-d 901 -c 3d_fullres -f 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("training initialisation"), std::string::npos) << r.output;
  EXPECT_NEAR(std_over_he(ws.model() + "/fold_0/checkpoint_final.ckpt"), 1.0, 0.1);

  r = ws.run("medseg_init_model", "-d 901 -c 3d_fullres -f 1 --init torch -o " + ws.model() + "_torch");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NEAR(std_over_he(ws.model() + "_torch/fold_1/checkpoint_final.ckpt"), 1.0 / std::sqrt(6.0), 0.05);

  r = ws.run("medseg_init_model", "-d 901 -c 3d_fullres --init kaiming");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--init"), std::string::npos) << r.output;
}
