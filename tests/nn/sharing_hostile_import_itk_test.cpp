// Issue 42, "hostile files, round 3": nnU-Net model folders and zips that are broken, hostile or given
// over their own output. Each row makes its file (Python's torch.save through /usr/bin/python3, or a
// hand-built pickle), runs the CLI under a memory and time bound, and checks the refusal is one line naming
// the file and the problem, that nothing was created or changed, and that nothing was written outside.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/json_io.h"
#include "support/bad_input.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

bool python_torch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }

// Runs a Python snippet with `d` bound to `folder` (an nnU-Net model folder) and torch imported;
// `ck(d)` loads fold_0's checkpoint and `save(ck, d)` writes it back as torch.save does.
void hostile_python(const std::string& folder, const std::string& code) {
  const std::string script = folder + "/../mutate.py";
  write_file_atomic(script,
                    "import sys, os, json, zipfile, torch\nd = sys.argv[1]\n"
                    "P = d + '/fold_0/checkpoint_final.pth'\n"
                    "def ck(): return torch.load(P, map_location='cpu')\n"
                    "def save(c): torch.save(c, P)\n" +
                        code + "\n");
  const int rc = std::system(("/usr/bin/python3 " + script + " " + folder + " 2>&1").c_str());
  fs::remove(script);
  ASSERT_EQ(rc, 0) << code;
}

// A CLI run bounded like a user's shell with `ulimit -v` and `timeout`: 3.2 GB and 60 s. Address space,
// not memory: the CLI maps 2.82 GB before it reads anything (LibTorch's CUDA libraries, DCMTK with its ICU
// and libxml2; measured 2026-11-28 with prlimit on medseg_import_nnunet), so the bombs get some 400 MB.
test::CmdResult bounded(const std::string& app, const std::string& args, const std::string& env) {
  return test::run_cli("/usr/bin/prlimit", "--as=3200000000 -- timeout 60 " + test::bin_dir() + "/" + app + " " + args,
                       env);
}

struct HostileRow {
  std::string name;
  std::string mutate;                  // Python, on the copy of the nnU-Net folder
  std::string args;                    // extra import arguments
  std::vector<std::string> fragments;  // in the one error line
};

class HostileImport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!python_torch()) return;
    ws_ = new test::Workspace(test::Workspace::Parts{false, true});
    const auto r = ws_->run("medseg_export_nnunet", "-m " + ws_->model() + " -o " + (*ws_ / "nnunet"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete ws_;
    ws_ = nullptr;
  }
  void SetUp() override {
    if (!ws_) GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
  }
  // A fresh copy of the exported nnU-Net folder under its own scratch folder.
  static std::string fresh(const test::TempDir& dir) {
    const std::string to = dir / "nnUNetTrainer__nnUNetPlans__3d_fullres";
    fs::copy(*ws_ / "nnunet", to, fs::copy_options::recursive);
    return to;
  }
  static test::Workspace* ws_;
};
test::Workspace* HostileImport::ws_ = nullptr;

// Every row against the import CLI: refused, nothing created or changed in the row's folder.
TEST_F(HostileImport, BrokenCheckpointsAndPlansAreRefusedNamingTheKey) {
  const std::vector<HostileRow> rows = {
      {"missing key",
       "c = ck(); del c['network_weights']['decoder.seg_layers.0.weight']; save(c)",
       "",
       {"checkpoint_final.pth", "lacks 'decoder.seg_layers.0.weight'"}},
      {"extra key",
       "c = ck(); c['network_weights']['encoder.extra'] = torch.zeros(2); save(c)",
       "",
       {"checkpoint_final.pth", "has 'encoder.extra'"}},
      {"wrong shape",
       "c = ck(); w = c['network_weights']; k = 'decoder.seg_layers.0.weight'; w[k] = torch.zeros(7, *w[k].shape[1:]); "
       "save(c)",
       "",
       {"checkpoint_final.pth", "'decoder.seg_layers.0.weight' has shape [7, "}},
      {"long weights",
       "c = ck(); w = c['network_weights']; k = 'decoder.seg_layers.0.weight'; w[k] = w[k].long(); save(c)",
       "",
       {"'decoder.seg_layers.0.weight' is Long"}},
      {"bool weights",
       "c = ck(); w = c['network_weights']; k = 'decoder.seg_layers.0.bias'; w[k] = w[k] > 0; save(c)",
       "",
       {"'decoder.seg_layers.0.bias' is Bool"}},
      {"0-dim weight",
       "c = ck(); c['network_weights']['decoder.seg_layers.0.bias'] = torch.tensor(1.0); save(c)",
       "",
       {"'decoder.seg_layers.0.bias' has shape []"}},
      {"NaN weight",
       "c = ck(); w = c['network_weights']; [w[k].view(-1).__setitem__(0, float('nan')) for k in w if k.endswith("
       "'seg_layers.0.weight')]; save(c)",
       "",
       {"'decoder.seg_layers.0.weight' holds NaN or infinite values"}},
      {"plans is a list", "json.dump([1, 2, 3], open(d + '/plans.json', 'w'))", "", {"plans.json"}},
      {"1e6 stages",
       "p = json.load(open(d + '/plans.json')); a = p['configurations']['3d_fullres']['architecture']['arch_kwargs']; "
       "a['n_stages'] = 1000000; json.dump(p, open(d + '/plans.json', 'w'))",
       "",
       {"plans.json", "n_stages"}},
      {"negative features",
       "p = json.load(open(d + '/plans.json')); a = p['configurations']['3d_fullres']['architecture']['arch_kwargs']; "
       "a['features_per_stage'] = [-f for f in a['features_per_stage']]; json.dump(p, open(d + '/plans.json', 'w'))",
       "",
       {"plans.json", "features_per_stage"}},
      {"unknown configuration",
       "c = ck(); c['init_args']['configuration'] = 'nope'; save(c)",
       "",
       {"checkpoint_final.pth", "init_args.configuration 'nope' is not a configuration of"}},
      {"26 mirror axes",
       "c = ck(); c['inference_allowed_mirroring_axes'] = (0,) * 26; save(c)",
       "",
       {"checkpoint_final.pth", "inference_allowed_mirroring_axes", "item 1 is not"}},
      {"text mirror axes",
       "c = ck(); c['inference_allowed_mirroring_axes'] = ('x', 1.5); save(c)",
       "",
       {"checkpoint_final.pth", "inference_allowed_mirroring_axes", "item 0 is not"}},
      {"deep plans",
       "open(d + '/plans.json', 'w').write('[' * 100000 + ']' * 100000)",
       "",
       {"plans.json: invalid JSON (nested deeper than 100 levels)"}},
      {"deep dataset.json",
       "open(d + '/dataset.json', 'w').write('{\"a\":' * 100000 + '1' + '}' * 100000)",
       "",
       {"dataset.json: invalid JSON (nested deeper than 100 levels)"}},
      {"a million labels",
       "j = json.load(open(d + '/dataset.json')); j['labels'] = {'l%d' % i: i for i in range(1000000)}; "
       "json.dump(j, open(d + '/dataset.json', 'w'))",
       "",
       {"dataset.json", "'labels' has 1000000 entries; medseg reads up to 32767"}},
      {"fold_ folder", "os.rename(d + '/fold_0', d + '/fold_')", "", {"fold_: is not a fold folder"}},
      {"huge fold number",
       "os.rename(d + '/fold_0', d + '/fold_99999999999')",
       "",
       {"fold_99999999999: is not a fold folder"}},
      {"huge seg layer index",
       "c = ck(); c['network_weights']['decoder.seg_layers.99999999999999999999.weight'] = torch.zeros(1); save(c)",
       "",
       {"has 'decoder.seg_layers.99999999999999999999.weight'"}},
      {"fold escaping", "", "-f 0/../../evilfold", {"fold must be a non-negative integer or 'all'"}},
      {"checkpoint escaping", "", "--chk ../../x", {"checkpoint name (--chk) '../../x' is not a valid name"}},
  };
  for (const HostileRow& row : rows) {
    SCOPED_TRACE(row.name);
    test::TempDir dir("hostile");
    const std::string nn = fresh(dir);
    if (!row.mutate.empty()) hostile_python(nn, row.mutate);
    const auto before = test::snapshot(dir.path());
    const auto outside = test::snapshot(ws_->root());
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = bounded("medseg_import_nnunet", "-i " + nn + " -o " + (dir / "out") + " " + row.args, "");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
    test::expect_refused(r, "medseg_import_nnunet", row.fragments);
    EXPECT_EQ(test::snapshot_diff(before, test::snapshot(dir.path())), "");
    EXPECT_EQ(test::snapshot_diff(outside, test::snapshot(ws_->root())), "");
  }
}

// Pickles built to cost gigabytes from kilobytes: refused within the bound, before the allocation.
TEST_F(HostileImport, PickleBombsAreRefusedWithinBoundedMemory) {
  // data.pkl replaced inside the archive (deflated: the zip holds a few kilobytes).
  const std::string replace_pickle =
      "src = zipfile.ZipFile(P); names = src.namelist(); entries = {n: src.read(n) for n in names}; src.close()\n"
      "pkl = [n for n in names if n.endswith('/data.pkl')][0]\n"
      "entries[pkl] = BODY\n"
      "with zipfile.ZipFile(P, 'w', zipfile.ZIP_DEFLATED) as z:\n"
      "    [z.writestr(n, entries[n]) for n in names]\n";
  const auto with_body = [&](const std::string& body) {
    std::string s = replace_pickle;
    s.replace(s.find("BODY"), 4, body);
    return s;
  };
  const std::vector<HostileRow> rows = {
      {"20 M empty lists", with_body("b'\\x80\\x02' + b']' * 20000000 + b'.'"), "", {"makes more than 1048576 values"}},
      {"20 M memo gets",
       with_body("b'\\x80\\x02]q\\x00' + b'h\\x00' * 10000000 + b'.'"),
       "",
       {"fills more than 4194304 stack, container and memo slots"}},
      {"2^25-float storage, deflated",
       "c = ck(); c['network_weights']['decoder.seg_layers.0.bias'] = torch.zeros(2 ** 25); save(c)\n"
       "src = zipfile.ZipFile(P); names = src.namelist(); entries = {n: src.read(n) for n in names}; src.close()\n"
       "with zipfile.ZipFile(P, 'w', zipfile.ZIP_DEFLATED) as z:\n"
       "    [z.writestr(n, entries[n]) for n in names]",
       "",
       {"more than the", "this file can hold"}},
      {"stride-0 view of 2^31",
       "c = ck(); c['network_weights']['decoder.seg_layers.0.bias'] = torch.zeros(1).expand(2 ** 31); save(c)",
       "",
       {"presents more elements than its storage of 1 holds"}},
      {"stride-0 view of 2^40",
       "c = ck(); c['network_weights']['decoder.seg_layers.0.bias'] = torch.zeros(1, 1).expand(2 ** 20, 2 ** 20); "
       "save(c)",
       "",
       {"presents more elements than its storage of 1 holds"}},
  };
  for (const HostileRow& row : rows) {
    SCOPED_TRACE(row.name);
    test::TempDir dir("bomb");
    const std::string nn = fresh(dir);
    hostile_python(nn, row.mutate);
    EXPECT_LT(fs::file_size(nn + "/fold_0/checkpoint_final.pth"), 4u << 20) << "the bomb is meant to be small";
    const auto before = test::snapshot(dir.path());
    const auto r = bounded("medseg_import_nnunet", "-i " + nn + " -o " + (dir / "out"), "");
    test::expect_refused(r, "medseg_import_nnunet", row.fragments);
    EXPECT_EQ(test::snapshot_diff(before, test::snapshot(dir.path())), "");
  }
}

// 40 k tensors, each with an .all_modules. alias: the alias check was quadratic (10 k took 30 s). All are
// zeros, as biases are: 40 k tensors of one digest made it quadratic again (50 k: past 60 s); now 3 s.
TEST_F(HostileImport, FortyThousandEqualAliasesAreCheckedInLinearTime) {
  test::TempDir dir("aliases");
  const std::string nn = fresh(dir);
  hostile_python(nn,
                 "c = ck(); w = c['network_weights']\n"
                 "for i in range(40000):\n"
                 "    t = torch.zeros(2); w['encoder.x%d.weight' % i] = t\n"
                 "    w['encoder.x%d.all_modules.0.weight' % i] = t\n"
                 "save(c)");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = bounded("medseg_import_nnunet", "-i " + nn + " -o " + (dir / "out"), "");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0);
  // The aliases check out; the extra tensors do not fit the network.
  test::expect_refused(r, "medseg_import_nnunet", {"has 'encoder.x"});
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// An output that is, contains or lies inside the input is refused with and without --overwrite: the
// model's own checkpoints were deleted.
TEST_F(HostileImport, OutputOverTheInputIsRefusedForImportAndExport) {
  test::TempDir dir("overlap");
  const std::string nn = fresh(dir);
  for (const std::string over : {"", " --overwrite"}) {
    SCOPED_TRACE(over);
    const auto before = test::snapshot(dir.path());
    for (const auto& [out, fragment] : std::vector<std::pair<std::string, std::string>>{
             {nn, "is the nnU-Net model folder being imported itself"},
             {nn + "/fold_0", "lies inside the nnU-Net model folder being imported"},
             {dir.path(), "contains the nnU-Net model folder being imported"},
             {nn + "/../" + fs::path(nn).filename().string(), "is the nnU-Net model folder being imported itself"}}) {
      const auto r = bounded("medseg_import_nnunet", "-i " + nn + " -o " + out + over, "");
      test::expect_refused(r, "medseg_import_nnunet", {fragment});
    }
    EXPECT_EQ(test::snapshot_diff(before, test::snapshot(dir.path())), "");
    const std::string model = ws_->model();
    const auto model_before = test::snapshot(model);
    for (const auto& [out, fragment] : std::vector<std::pair<std::string, std::string>>{
             {model, "is the model folder being exported itself"},
             {model + "/fold_0", "lies inside the model folder being exported"},
             {fs::path(model).parent_path().string(), "contains the model folder being exported"}}) {
      const auto r = bounded("medseg_export_nnunet", "-m " + model + " -o " + out + over, ws_->env());
      test::expect_refused(r, "medseg_export_nnunet", {fragment});
    }
    EXPECT_EQ(test::snapshot_diff(model_before, test::snapshot(model)), "");
  }
}

// nnU-Net's zip with two models, the second hostile: nothing is installed, no scratch folder stays, and
// the error names the zip's entry, not the removed scratch path.
TEST_F(HostileImport, AZipOfTwoModelsInstallsBothOrNone) {
  test::TempDir dir("twomodels");
  const std::string nn = fresh(dir);
  hostile_python(
      nn,
      "m = 'Dataset901_Synthetic/nnUNetTrainer__nnUNetPlans__3d_fullres/'\n"
      "bad = 'Dataset901_Synthetic/nnUNetTrainer__nnUNetPlans__3d_lowres/'\n"
      "c = ck(); c['network_weights']['encoder.extra'] = torch.zeros(2); torch.save(c, d + '/../bad.pth')\n"
      "with zipfile.ZipFile(d + '/../two.zip', 'w') as z:\n"
      "    for f in ('plans.json', 'dataset.json', 'fold_0/checkpoint_final.pth'): z.write(d + '/' + f, m + f)\n"
      "    for f in ('plans.json', 'dataset.json'): z.write(d + '/' + f, bad + f)\n"
      "    z.write(d + '/../bad.pth', bad + 'fold_0/checkpoint_final.pth')");
  fs::create_directories(dir / "results");
  const auto r = bounded("medseg_install_model_zip", dir / "two.zip" + " -o " + (dir / "results"), "");
  test::expect_refused(
      r, "medseg_install_model_zip",
      {"two.zip:Dataset901_Synthetic/nnUNetTrainer__nnUNetPlans__3d_lowres/fold_0/checkpoint_final.pth",
       "has 'encoder.extra'", "nothing was installed"});
  EXPECT_TRUE(fs::is_empty(dir / "results")) << test::read_text(dir / "results");
  EXPECT_EQ(r.output.find(".nnunet-zip.tmp"), std::string::npos) << r.output;

  // A deep dataset.json inside the zip: refused, no scratch folder left.
  hostile_python(nn,
                 "m = 'Dataset901_Synthetic/nnUNetTrainer__nnUNetPlans__3d_fullres/'\n"
                 "with zipfile.ZipFile(d + '/../deep.zip', 'w', zipfile.ZIP_DEFLATED) as z:\n"
                 "    for f in ('plans.json', 'fold_0/checkpoint_final.pth'): z.write(d + '/' + f, m + f)\n"
                 "    z.writestr(m + 'dataset.json', '[' * 100000 + ']' * 100000)");
  const auto deep = bounded("medseg_install_model_zip", dir / "deep.zip" + " -o " + (dir / "results"), "");
  test::expect_refused(deep, "medseg_install_model_zip", {"dataset.json: invalid JSON (nested deeper than 100"});
  EXPECT_TRUE(fs::is_empty(dir / "results"));
}

}  // namespace
