// medseg_checkpoint info / diff / average, run as a user would.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;
using namespace medseg::checkpoint;

namespace {

struct Shared : torch::nn::Module {
  explicit Shared(int64_t width = 16) {
    enc = register_module("enc", torch::nn::Linear(width, 8));
    dec_enc = register_module("dec_enc", enc);  // the decoder.encoder.* alias
    out = register_module("out", torch::nn::Linear(8, 2));
  }
  torch::nn::Linear enc{nullptr}, dec_enc{nullptr}, out{nullptr};
};

std::string save(const test::TempDir& dir, const std::string& name, int seed, int64_t width = 16) {
  torch::manual_seed(seed);
  Shared m(width);
  Checkpoint ck;
  ck.epoch = 3;
  ck.weights = module_weights(m);
  ck.weights.emplace_back("steps", torch::tensor({static_cast<int64_t>(seed)}));  // integer: copied from first
  const std::string path = dir / name;
  save_checkpoint(path, ck);
  return path;
}

at::Tensor weight(const Checkpoint& ck, const std::string& name) {
  for (const auto& [n, t] : ck.weights)
    if (n == name) return t;
  return {};
}

}  // namespace

TEST(TrainingCheckpointCli, InfoShowsVersionEpochTensorsAndAliases) {
  test::TempDir dir("ckcli");
  const auto a = save(dir, "a.ck", 1);
  const auto r = test::run_cli("medseg_checkpoint", "info " + a);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("format version: 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epoch: 3"), std::string::npos);
  EXPECT_NE(r.output.find("weights/enc.weight"), std::string::npos);
  EXPECT_NE(r.output.find("(alias of weights/enc.weight)"), std::string::npos);
  EXPECT_NE(r.output.find("2 aliased keys"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[8, 16]"), std::string::npos);
}

TEST(TrainingCheckpointCli, DiffReportsZeroForIdenticalAndDifferencesOtherwise) {
  test::TempDir dir("ckcli2");
  const auto a = save(dir, "a.ck", 1), a2 = save(dir, "a2.ck", 1), b = save(dir, "b.ck", 2);
  auto r = test::run_cli("medseg_checkpoint", "diff " + a + " " + a2);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("max abs difference: 0\n"), std::string::npos) << r.output;
  r = test::run_cli("medseg_checkpoint", "diff " + a + " " + b);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("max abs difference: 0\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("weights/enc.weight"), std::string::npos);
}

TEST(TrainingCheckpointCli, AverageIsAliasAwareAndChecksShapes) {
  test::TempDir dir("ckcli3");
  const auto a = save(dir, "a.ck", 1), b = save(dir, "b.ck", 2), c = save(dir, "c.ck", 3);
  const std::string out = dir / "avg.ck";
  auto r = test::run_cli("medseg_checkpoint", "average " + a + " " + b + " " + c + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Checkpoint ca = load_checkpoint(a), cb = load_checkpoint(b), cc = load_checkpoint(c),
                   avg = load_checkpoint(out);
  const auto expected = (weight(ca, "enc.weight") + weight(cb, "enc.weight") + weight(cc, "enc.weight")) / 3;
  EXPECT_TRUE(torch::allclose(weight(avg, "enc.weight"), expected, 1e-6, 1e-7));
  EXPECT_EQ(weight(avg, "enc.weight").data_ptr(), weight(avg, "dec_enc.weight").data_ptr());
  EXPECT_EQ(weight(avg, "steps").item<int64_t>(), 1);  // non-float: from the first file
  // Same size as an input, up to the "averaged_from" note in the metadata.
  EXPECT_LE(std::abs(static_cast<long>(fs::file_size(out)) - static_cast<long>(fs::file_size(a))), 512);

  const auto wide = save(dir, "wide.ck", 4, 32);
  r = test::run_cli("medseg_checkpoint", "average " + a + " " + wide + " -o " + (dir / "bad.ck"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("shape"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wide.ck"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "bad.ck"));

  // Issue 42: -o naming an input replaced that input with the average.
  const auto before = fs::file_size(b);
  r = test::run_cli("medseg_checkpoint", "average " + a + " " + b + " -o " + b);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(b + ": is the input checkpoint itself"), std::string::npos) << r.output;
  EXPECT_EQ(fs::file_size(b), before);
  EXPECT_TRUE(torch::equal(weight(load_checkpoint(b), "enc.weight"), weight(cb, "enc.weight")));
}

TEST(TrainingCheckpointCli, CorruptFileIsAClearError) {
  test::TempDir dir("ckcli4");
  const auto a = save(dir, "a.ck", 1);
  {
    std::fstream f(a, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(a)) - 40);
    f.put('\x5a');
  }
  const auto r = test::run_cli("medseg_checkpoint", "info " + a);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("checksum mismatch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(a), std::string::npos);
}
