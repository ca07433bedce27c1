// sharing/torch_pickle.h on files that Python's torch.save writes (Debian's python3-torch): a checkpoint shaped
// like nnU-Net's, numpy scalars in its logs and torch.device in its init_args included, reads back value for
// value; a pickle that names any other global is refused naming it, and what it names never runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/json_io.h"
#include "sharing/torch_pickle.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;
using Kind = sharing::PickleValue::Kind;

namespace {

bool have_torch() { return std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") == 0; }

bool python(const std::string& dir, const std::string& body) {
  write_file_atomic(dir + "/gen.py",
                    "import sys, os, collections, numpy as np, torch\nd = sys.argv[1]\n" + body + "\n");
  return std::system(("cd " + dir + " && /usr/bin/python3 gen.py " + dir + " 2>&1").c_str()) == 0;
}

std::string refusal(const std::string& path) {
  try {
    sharing::read_torch_file(path);
  } catch (const FileError& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(TorchPickle, AnNnUNetShapedCheckpointReadsBackValueForValue) {
  if (!have_torch()) GTEST_SKIP() << "no python3-torch";
  test::TempDir d("pkl");
  ASSERT_TRUE(python(d.path(), R"(
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
w = collections.OrderedDict()
w['encoder.a.weight'] = base
w['decoder.encoder.a.weight'] = base           # an alias: the same storage
w['b.t'] = base.t()                            # a strided view
w['c.half'] = torch.tensor([0.5, -2.0], dtype=torch.float16)
w['d.count'] = torch.tensor(7, dtype=torch.int64)
ck = {'network_weights': w, 'trainer_name': 'nnUNetTrainer', 'current_epoch': 1000,
      'init_args': {'configuration': '3d_fullres', 'fold': 0, 'device': torch.device('cuda', 0)},
      'inference_allowed_mirroring_axes': (0, 1, 2), '_best_ema': np.float64(0.875),
      'logging': {'mean_fg_dice': [np.float64(0.25), np.float32(0.5)], 'epoch': [np.int64(-3)], 'lr': [1e-2, 9.9e-3]},
      'grad_scaler_state': None, 'flags': [True, False], 'big': 2 ** 40, 'neg': -300}
torch.save(ck, d + '/ck.pth')
)"));
  const auto ck = sharing::read_torch_file(d / "ck.pth");
  ASSERT_EQ(ck->kind, Kind::Dict);
  EXPECT_EQ(ck->get("trainer_name")->s, "nnUNetTrainer");
  EXPECT_EQ(ck->get("current_epoch")->i, 1000);
  EXPECT_EQ(ck->get("init_args")->get("configuration")->s, "3d_fullres");
  EXPECT_EQ(ck->get("init_args")->get("device")->kind, Kind::Device);
  ASSERT_EQ(ck->get("inference_allowed_mirroring_axes")->items.size(), 3u);
  EXPECT_EQ(ck->get("inference_allowed_mirroring_axes")->items[2]->i, 2);
  EXPECT_EQ(ck->get("_best_ema")->f, 0.875);
  const auto* log = ck->get("logging");
  EXPECT_EQ(log->get("mean_fg_dice")->items[0]->f, 0.25);
  EXPECT_EQ(log->get("mean_fg_dice")->items[1]->f, 0.5);
  EXPECT_EQ(log->get("epoch")->items[0]->i, -3);
  EXPECT_EQ(log->get("lr")->items[1]->f, 9.9e-3);
  EXPECT_EQ(ck->get("grad_scaler_state")->kind, Kind::None);
  EXPECT_TRUE(ck->get("flags")->items[0]->b);
  EXPECT_EQ(ck->get("big")->i, int64_t(1) << 40);
  EXPECT_EQ(ck->get("neg")->i, -300);

  const auto* w = ck->get("network_weights");
  ASSERT_EQ(w->dict.size(), 5u);
  EXPECT_EQ(w->dict[1].first->s, "decoder.encoder.a.weight");  // the file's order
  const at::Tensor a = w->get("encoder.a.weight")->tensor, alias = w->get("decoder.encoder.a.weight")->tensor;
  EXPECT_TRUE(at::equal(a, at::arange(24, at::kFloat).reshape({4, 6})));
  EXPECT_EQ(a.data_ptr(), alias.data_ptr()) << "one storage, read once";
  EXPECT_TRUE(at::equal(w->get("b.t")->tensor, at::arange(24, at::kFloat).reshape({4, 6}).t()));
  EXPECT_EQ(w->get("c.half")->tensor.scalar_type(), at::kHalf);
  EXPECT_EQ(w->get("c.half")->tensor[1].item<float>(), -2.0f);
  EXPECT_EQ(w->get("d.count")->tensor.dim(), 0);
  EXPECT_EQ(w->get("d.count")->tensor.item<int64_t>(), 7);
}

TEST(TorchPickle, AnyOtherGlobalIsRefusedNamingItAndNeverRuns) {
  if (!have_torch()) GTEST_SKIP() << "no python3-torch";
  test::TempDir d("pklbad");
  ASSERT_TRUE(python(d.path(), R"(
class Evil:
    def __reduce__(self):
        return (os.system, ('touch ' + d + '/pwned',))
class Plain:  # an arbitrary class: refused too, though it would run nothing
    pass
torch.save({'network_weights': {}, 'x': Evil()}, d + '/evil.pth')
torch.save({'network_weights': {}, 'x': Plain()}, d + '/class.pth')
torch.save({'x': eval}, d + '/builtin.pth')  # protocol 2 names it __builtin__.eval
open(d + '/not_zip.pth', 'wb').write(b'\x80\x02}q\x00.')
data = open(d + '/evil.pth', 'rb').read()
open(d + '/truncated.pth', 'wb').write(data[:len(data) // 2])
)"));
  ASSERT_FALSE(fs::exists(d / "pwned")) << "Python itself must not have run it either";
  const std::string evil = refusal(d / "evil.pth");
  EXPECT_NE(evil.find("'posix.system'"), std::string::npos) << evil;
  EXPECT_NE(evil.find("nothing was executed"), std::string::npos) << evil;
  EXPECT_FALSE(fs::exists(d / "pwned"));
  EXPECT_NE(refusal(d / "class.pth").find("'__main__.Plain'"), std::string::npos) << refusal(d / "class.pth");
  EXPECT_NE(refusal(d / "builtin.pth").find("'__builtin__.eval'"), std::string::npos) << refusal(d / "builtin.pth");
  EXPECT_NE(refusal(d / "not_zip.pth").find("not_zip.pth"), std::string::npos);
  EXPECT_NE(refusal(d / "truncated.pth").find("truncated.pth"), std::string::npos);
}

namespace {

// A BINUNICODE string opcode.
std::string uni(const std::string& s) {
  const auto n = static_cast<uint32_t>(s.size());
  return std::string("X") + std::string(reinterpret_cast<const char*>(&n), 4) + s;
}

// {'t': a float tensor of `size` elements, stride 1, at `offset` of a 4-element storage}, as torch.save pickles it.
std::string tensor_pickle(int size, int offset) {
  return std::string("\x80\x02}(") + uni("t") + "ctorch._utils\n_rebuild_tensor_v2\n((" + uni("storage") +
         "ctorch\nFloatStorage\n" + uni("0") + uni("cpu") + "K\x04tQK" + std::string(1, static_cast<char>(offset)) +
         "K" + std::string(1, static_cast<char>(size)) + "\x85K\x01\x85\x89" + "ccollections\nOrderedDict\n)RtRu.";
}

}  // namespace

TEST(TorchPickle, AViewBeyondItsStorageIsRefused) {
  const sharing::StorageBytes four_floats = [](const std::string&, uint64_t bytes) { return std::string(bytes, '\0'); };
  const auto ok = sharing::decode_pickle(tensor_pickle(3, 1), "ok.pkl", four_floats);
  EXPECT_EQ(ok->get("t")->tensor.numel(), 3);
  for (const auto& [size, offset] : {std::pair{10, 0}, std::pair{4, 1}}) {
    try {
      sharing::decode_pickle(tensor_pickle(size, offset), "bad.pkl", four_floats);
      ADD_FAILURE() << "a view of " << size << " elements at " << offset << " was read from 4";
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find("reaches element"), std::string::npos) << e.what();
    }
  }
  // A list that holds itself (pickle can say so) is read without looping; a truncated pickle is named.
  const std::string cyclic("\x80\x02]q\0h\0a.", 9);  // [] memoized as 0, then appended to itself
  const auto c = sharing::decode_pickle(cyclic, "cyclic.pkl", four_floats);
  EXPECT_EQ(c->items.at(0), &c.root());
  try {
    sharing::decode_pickle(tensor_pickle(3, 1).substr(0, 40), "cut.pkl", four_floats);
    ADD_FAILURE() << "a truncated pickle was read";
  } catch (const FileError& e) { EXPECT_NE(std::string(e.what()).find("cut.pkl"), std::string::npos) << e.what(); }
}
