// Checkpoint container and store: round trips, corruption detection, aliasing, optimizer resume.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "checkpoint/checkpoint.h"
#include "checkpoint/container.h"
#include "core/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;
using namespace medseg::checkpoint;
using nlohmann::json;

namespace {

at::Tensor find(const NamedTensors& v, const std::string& name) {
  for (const auto& [n, t] : v)
    if (n == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  return {};
}

std::string expect_file_error(const std::string& path) {
  try {
    read_archive(path);
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no FileError for " << path;
  return "";
}

void patch_byte(const std::string& path, int64_t pos, char value) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(pos);
  f.put(value);
}

// Two registrations of the same Linear: the nnU-Net decoder/encoder situation.
struct Aliased : torch::nn::Module {
  Aliased() {
    a = register_module("a", torch::nn::Linear(64, 32));
    b = register_module("b", a);
    head = register_module("head", torch::nn::Linear(32, 2));
  }
  torch::nn::Linear a{nullptr}, b{nullptr}, head{nullptr};
};

}  // namespace

TEST(TrainingCheckpointFormat, RoundTripKeepsValuesDtypesViewsAndMeta) {
  test::TempDir dir("ckfmt");
  torch::manual_seed(1);
  TensorArchive a;
  a.meta = {{"hello", "world"}, {"n", 3}};
  const auto base = torch::randn({4, 5});
  a.tensors = {{"f32", torch::randn({2, 3})},
               {"f64", torch::randn({3}, torch::kDouble)},
               {"f16", torch::randn({7}).to(torch::kHalf)},
               {"i64", torch::arange(10)},
               {"u8", torch::arange(5).to(torch::kByte)},
               {"bool", torch::tensor({true, false, true})},
               {"transposed", base.t()},
               {"row", base[2]},
               {"scalar", torch::tensor(2.5)},
               {"empty", torch::empty({0, 3})}};
  const std::string path = dir / "a.ck";
  write_archive(path, a);
  const TensorArchive b = read_archive(path);
  EXPECT_EQ(b.meta, a.meta);
  ASSERT_EQ(b.tensors.size(), a.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(b.tensors[i].first, a.tensors[i].first);
    EXPECT_EQ(b.tensors[i].second.scalar_type(), a.tensors[i].second.scalar_type()) << a.tensors[i].first;
    EXPECT_TRUE(torch::equal(b.tensors[i].second, a.tensors[i].second)) << a.tensors[i].first;
  }
  // "transposed" and "row" are views of one storage: stored once, shared again after reading.
  EXPECT_TRUE(find(b.tensors, "transposed").storage().is_alias_of(find(b.tensors, "row").storage()));
}

TEST(TrainingCheckpointFormat, CorruptTruncatedForeignAndMissingFilesAreClearErrors) {
  test::TempDir dir("ckbad");
  TensorArchive a;
  a.meta = {{"x", 1}};
  a.tensors = {{"w", torch::ones({1000})}};
  const std::string good = dir / "good.ck";
  write_archive(good, a);
  const auto size = static_cast<int64_t>(fs::file_size(good));

  const std::string flipped = dir / "flipped.ck";
  fs::copy_file(good, flipped);
  patch_byte(flipped, size - 100, 7);  // inside the tensor bytes
  EXPECT_NE(expect_file_error(flipped).find("checksum mismatch"), std::string::npos);

  const std::string truncated = dir / "truncated.ck";
  fs::copy_file(good, truncated);
  fs::resize_file(truncated, size - 10);
  EXPECT_NE(expect_file_error(truncated).find("truncated"), std::string::npos);

  const std::string foreign = dir / "foreign.ck";
  std::ofstream(foreign) << "PK\x03\x04 this is a zip-like torch.save file, not ours..............";
  EXPECT_NE(expect_file_error(foreign).find("not a medseg checkpoint"), std::string::npos);

  const std::string future = dir / "future.ck";
  fs::copy_file(good, future);
  patch_byte(future, 8, 99);  // version field
  EXPECT_NE(expect_file_error(future).find("version 99"), std::string::npos);

  EXPECT_NE(expect_file_error(dir / "missing.ck").find("not found"), std::string::npos);
}

// Issue 26: a folder where the checkpoint belongs said "cannot determine file size".
TEST(TrainingCheckpointFormat, AFolderIsNamedAsAFolder) {
  test::TempDir dir("ckdir");
  fs::create_directories(dir / "checkpoint_final.ckpt");
  EXPECT_EQ(expect_file_error(dir / "checkpoint_final.ckpt"),
            dir / "checkpoint_final.ckpt: is a folder, not a checkpoint file");
}

namespace {

template <class T>
void put_le(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// A container assembled by hand from the layout in docs/checkpoints.md, with a correct CRC32 and
// trailer, so that only the numbers inside the header are wrong. The header is padded with spaces
// so that 32 bytes of zero padding sit between it and the data section.
std::string hand_container(int64_t blob_offset, int64_t blob_nbytes, const std::string& data) {
  const json header = {
      {"format", "medseg-checkpoint"},
      {"meta", json::object()},
      {"tensors",
       {{{"name", "w"}, {"blob", 0}, {"dtype", "float32"}, {"shape", {1}}, {"strides", {1}}, {"storage_offset", 0}}}},
      {"blobs", {{{"dtype", "float32"}, {"offset", blob_offset}, {"nbytes", blob_nbytes}}}},
      {"data_bytes", static_cast<int64_t>(data.size())}};
  std::string text = header.dump();
  while ((24 + text.size()) % 64 != 32) text += ' ';
  std::string out("MEDSEGCK", 8);
  put_le<uint32_t>(out, 1);
  put_le<uint32_t>(out, 0);
  put_le<uint64_t>(out, text.size());
  out += text;
  out.append(32, '\0');
  out += data;
  const auto crc =
      static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size())));
  put_le<uint64_t>(out, out.size());
  put_le<uint32_t>(out, crc);
  out += "CKOK";
  return out;
}

struct BlobRow {
  const char* name;
  int64_t offset, nbytes;
  std::string data;
};

}  // namespace

// Blob offsets that only an overflowing or unchecked sum accepted (found while writing the checkpoint
// fuzz target, docs/hardening.md): before, the first row's offset + nbytes wrapped negative and the
// bytes were read from the wrong place; the second read the padding before the data section.
class TrainingCheckpointBadBlob : public ::testing::TestWithParam<BlobRow> {};

TEST_P(TrainingCheckpointBadBlob, IsRefusedAsCorruptHeader) {
  test::TempDir dir("ckblob");
  const std::string path = dir / "bad.ck";
  std::ofstream(path, std::ios::binary) << hand_container(GetParam().offset, GetParam().nbytes, GetParam().data);
  EXPECT_NE(expect_file_error(path).find("bad blob offsets"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Rows, TrainingCheckpointBadBlob,
                         ::testing::Values(BlobRow{"offset_plus_size_overflows",
                                                   std::numeric_limits<int64_t>::max() - 63, 64, std::string(64, 'x')},
                                           BlobRow{"negative_offset_into_padding", -32, 32, std::string(32, 'x')}),
                         [](const auto& row) { return std::string(row.param.name); });

TEST(TrainingCheckpointFormat, HandMadeContainerIsReadable) {
  // The control for the rows above: the same hand-made file with sane offsets loads.
  test::TempDir dir("ckhand");
  const std::string path = dir / "good.ck";
  std::string data(8, '\0');
  const float v = 2.5f;
  std::memcpy(data.data(), &v, 4);
  std::ofstream(path, std::ios::binary) << hand_container(0, 8, data);
  const TensorArchive a = read_archive(path);
  ASSERT_EQ(a.tensors.size(), 1u);
  EXPECT_EQ(a.tensors[0].second.item<float>(), 2.5f);
}

TEST(TrainingCheckpointStore, AliasedSubmoduleIsStoredOnceAndSharedAfterLoad) {
  test::TempDir dir("ckalias");
  torch::manual_seed(3);
  auto model = std::make_shared<Aliased>();
  Checkpoint ck;
  ck.weights = module_weights(*model);
  ASSERT_EQ(ck.weights.size(), 6u);  // a.{weight,bias}, b.{weight,bias}, head.{weight,bias}
  const int64_t unique_bytes = (64 * 32 + 32 + 32 * 2 + 2) * 4;
  const std::string path = dir / "alias.ck";
  save_checkpoint(path, ck);
  EXPECT_LE(static_cast<int64_t>(fs::file_size(path)), unique_bytes + 4096);
  EXPECT_GE(static_cast<int64_t>(fs::file_size(path)), unique_bytes);

  const Checkpoint back = load_checkpoint(path);
  EXPECT_TRUE(find(back.weights, "a.weight").is_same(find(back.weights, "b.weight")) ||
              find(back.weights, "a.weight").storage().is_alias_of(find(back.weights, "b.weight").storage()));
  EXPECT_EQ(find(back.weights, "a.weight").data_ptr(), find(back.weights, "b.weight").data_ptr());

  torch::manual_seed(99);
  auto fresh = std::make_shared<Aliased>();
  load_weights(*fresh, back.weights);
  EXPECT_TRUE(torch::equal(fresh->a->weight, model->a->weight));
  EXPECT_TRUE(torch::equal(fresh->head->bias, model->head->bias));
  EXPECT_EQ(fresh->a->weight.data_ptr(), fresh->b->weight.data_ptr());
}

TEST(TrainingCheckpointStore, LoadWeightsRestoresSharingIntoUntiedModule) {
  // Checkpoint says x.weight and y.weight are one tensor; the module has them separate.
  auto m = std::make_shared<torch::nn::Module>();
  auto x = m->register_module("x", torch::nn::Linear(3, 3));
  auto y = m->register_module("y", torch::nn::Linear(3, 3));
  const auto w = torch::randn({3, 3});
  NamedTensors weights = {
      {"x.weight", w}, {"x.bias", torch::zeros({3})}, {"y.weight", w}, {"y.bias", torch::ones({3})}};
  load_weights(*m, weights);
  EXPECT_TRUE(torch::equal(x->weight, w));
  EXPECT_EQ(x->weight.data_ptr(), y->weight.data_ptr());
  EXPECT_NE(x->bias.data_ptr(), y->bias.data_ptr());
}

TEST(TrainingCheckpointStore, LoadWeightsReportsMissingUnexpectedAndShapeErrors) {
  auto m = std::make_shared<torch::nn::Module>();
  m->register_module("x", torch::nn::Linear(3, 2));
  EXPECT_THROW(load_weights(*m, {{"x.weight", torch::zeros({2, 3})}}), Error);
  EXPECT_THROW(
      load_weights(*m, {{"x.weight", torch::zeros({2, 3})}, {"x.bias", torch::zeros({2})}, {"z", torch::zeros({1})}}),
      Error);
  EXPECT_THROW(load_weights(*m, {{"x.weight", torch::zeros({3, 3})}, {"x.bias", torch::zeros({2})}}), Error);
  EXPECT_NO_THROW(load_weights(*m, {{"x.weight", torch::zeros({2, 3})}}, /*strict=*/false));
}

TEST(TrainingCheckpointStore, AllFieldsRoundTrip) {
  test::TempDir dir("ckfields");
  Checkpoint ck;
  ck.epoch = 17;
  ck.weights = {{"w", torch::arange(6).to(torch::kFloat).reshape({2, 3})}};
  ck.grad_scaler = {{"scale", 32768.0}, {"growth_tracker", 5}};
  ck.sampler = {{"position", 1234}};
  ck.logs = json::array({{{"epoch", 0}, {"train_loss", -0.1}}});
  ck.ema = 0.75;
  ck.plans = {{"plans_name", "nnUNetPlans"}};
  ck.dataset = {{"labels", {{"background", 0}, {"zeta", 1}, {"alpha", 2}}}};  // not by name: kept as listed
  ck.trainer_config = {{"epochs", 1000}};
  ck.fingerprint = {{"spacings", {{1, 1, 1}}}};
  ck.extra = {{"trainer_name", "nnUNetTrainer"}};
  torch::manual_seed(5);
  ck.rng = capture_rng_states({std::string("a\0b", 3), "", "worker-2"});
  const auto expected_next = torch::randn({4});

  const std::string path = dir / "f.ck";
  save_checkpoint(path, ck);
  const Checkpoint b = load_checkpoint(path);
  EXPECT_EQ(b.epoch, 17);
  EXPECT_TRUE(torch::equal(find(b.weights, "w"), ck.weights[0].second));
  EXPECT_EQ(b.grad_scaler, ck.grad_scaler);
  EXPECT_EQ(b.sampler, ck.sampler);
  EXPECT_EQ(b.logs, ck.logs);
  EXPECT_EQ(b.ema, ck.ema);
  EXPECT_EQ(b.plans, ck.plans);
  EXPECT_EQ(b.dataset, ck.dataset);
  EXPECT_EQ(b.dataset.dump(), R"({"labels":{"background":0,"zeta":1,"alpha":2}})");
  EXPECT_EQ(b.trainer_config, ck.trainer_config);
  EXPECT_EQ(b.fingerprint, ck.fingerprint);
  EXPECT_EQ(b.extra, ck.extra);
  ASSERT_EQ(b.rng.workers.size(), 3u);
  EXPECT_EQ(b.rng.workers[0], std::string("a\0b", 3));
  EXPECT_EQ(b.rng.workers[1], "");
  EXPECT_EQ(b.rng.workers[2], "worker-2");
  EXPECT_EQ(b.rng.cuda.size(), ck.rng.cuda.size());

  torch::manual_seed(12345);  // scramble, then restore: the stream continues where it was saved
  restore_rng_states(b.rng);
  EXPECT_TRUE(torch::equal(torch::randn({4}), expected_next));
}

TEST(TrainingCheckpointStore, ArchiveWithoutTrainingMetaIsRejected) {
  test::TempDir dir("ckkind");
  TensorArchive a;
  a.tensors = {{"w", torch::ones({2})}};
  write_archive(dir / "x.ck", a);
  EXPECT_THROW(load_checkpoint(dir / "x.ck"), FileError);
}
