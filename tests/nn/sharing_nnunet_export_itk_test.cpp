// medseg_export_nnunet (sharing/nnunet_export.h). The state-dict names it writes are compared with the
// names nnU-Net's own network code gives (tests/data/nnunet_state_dict_*_3stages.txt, written by
// dynamic-network-architectures: tests/data/nnunet_state_dict_keys.py); the .pth it writes is read by
// Python's torch.load (Debian's python3-torch) and brought back by scripts/import_nnunet_model.py, an
// independent reader, after which medseg_predict must give the same probabilities as the original model.
// The same file re-saved by Python's torch.save (as nnU-Net saves) is read back by medseg_import_nnunet, which
// runs no Python. nnU-Net's predictor on an export is scripts/check_nnunet_export.sh (needs nnU-Net; not in CI).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "checkpoint/checkpoint.h"
#include "core/json_io.h"
#include "io/image_io.h"
#include "models/network.h"
#include "models_test_util.h"
#include "preprocessing/npy.h"
#include "preprocessing/npz.h"
#include "sharing/nnunet_export.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// name -> shape text ("[4, 1, 3, 3, 3]") from a fixture file.
std::map<std::string, std::string> fixture(const std::string& name) {
  std::ifstream f(std::string(MEDSEG_TEST_SOURCE_DIR) + "/tests/data/nnunet_state_dict_" + name + "_3stages.txt");
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return out;
}

std::string shape_text(const at::Tensor& t) {
  std::ostringstream o;
  o << "[";
  for (int64_t i = 0; i < t.dim(); ++i) o << (i ? ", " : "") << t.size(i);
  o << "]";
  return o.str();
}

void expect_nnunet_names(const std::string& cls, const std::vector<int64_t>& per_stage, const std::string& file) {
  const test::Shapes k(3, std::vector<int64_t>(3, 3));
  test::Shapes s(3, std::vector<int64_t>(3, 2));
  s[0] = {1, 1, 1};
  auto net = models::build_network(test::unet_arch(cls, 3, {4, 8, 16}, k, s, per_stage, {2, 2}), 1, 3);
  std::map<std::string, std::string> exported;
  for (const auto& [name, t] : checkpoint::module_weights(*net))
    for (const std::string& n : sharing::nnunet_state_dict_names(name, false)) exported[n] = shape_text(t);
  const auto want = fixture(file);
  ASSERT_GT(want.size(), 100u) << "fixture " << file << " not found or short";
  EXPECT_EQ(exported, want);
}

}  // namespace

TEST(NnunetExport, NamesAreThoseOfNnUNetsPlainConvUNet) {
  expect_nnunet_names("PlainConvUNet", {2, 2, 2}, "plainconvunet");
}

TEST(NnunetExport, NamesAreThoseOfNnUNetsResidualEncoderUNet) {
  expect_nnunet_names("ResidualEncoderUNet", {1, 2, 2}, "resencunet");
}

TEST(NnunetExport, DropoutMovesTheNormOneSlotUp) {
  // ConvDropoutNormReLU.all_modules is (conv, dropout, norm, nonlin) with dropout, (conv, norm, nonlin) without.
  EXPECT_EQ(sharing::nnunet_state_dict_names("encoder.stages.1.0.convs.0.norm.weight", true),
            (std::vector<std::string>{"encoder.stages.1.0.convs.0.norm.weight",
                                      "decoder.encoder.stages.1.0.convs.0.norm.weight",
                                      "encoder.stages.1.0.convs.0.all_modules.2.weight",
                                      "decoder.encoder.stages.1.0.convs.0.all_modules.2.weight"}));
  EXPECT_EQ(sharing::nnunet_state_dict_names("decoder.seg_layers.0.weight", true),
            (std::vector<std::string>{"decoder.seg_layers.0.weight"}));
}

// A random-initialised model (medseg_init_model) -> medseg_export_nnunet -> torch.load in Python (keys nnU-Net's
// predictor reads, aliases sharing values) -> scripts/import_nnunet_model.py -> medseg_predict on both: equal.
TEST(NnunetExport, ExportedImportedAndInstalledModelsPredictTheSame) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3-torch";
  test::TempDir d("nnexp");
  const std::string env =
      "MEDSEG_RAW=" + d / "raw" + " MEDSEG_PREPROCESSED=" + d / "pre" + " MEDSEG_RESULTS=" + d / "res";
  fs::create_directories(d / "raw");
  auto r =
      test::run_cli("medseg_make_dataset",
                    "-d 953 -n Exp --cases 4 --test-cases 1 --min-shape 12 20 20 --max-shape 14 22 22 --seed 5", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d 953 -c 3d_fullres --np 2 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_init_model", "-d 953 -c 3d_fullres -f 0 --seed 3 -o " + d / "model", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_export_nnunet", "-m " + d / "model" + " -o " + d / "nnunet", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "nnunet/plans.json"));
  EXPECT_TRUE(fs::exists(d / "nnunet/dataset.json"));

  const std::string py = d / "check.py";
  write_file_atomic(py, R"(
import sys, torch
# weights_only: what every torch since 1.13 loads without running code (issue 42: restore_type_tag was refused)
ck = torch.load(sys.argv[1] + '/nnunet/fold_0/checkpoint_final.pth', map_location='cpu', weights_only=True)
assert ck['trainer_name'] == 'nnUNetTrainer', ck['trainer_name']
assert ck['init_args']['configuration'] == '3d_fullres', ck['init_args']
assert tuple(ck['inference_allowed_mirroring_axes']) == (0, 1, 2), ck['inference_allowed_mirroring_axes']
w = ck['network_weights']
enc = [k for k in w if k.startswith('encoder.')]
assert enc and all(torch.equal(w[k], w['decoder.' + k]) for k in enc)
conv = [k for k in w if '.conv.' in k]
assert conv and all(torch.equal(w[k], w[k.replace('.conv.', '.all_modules.0.')]) for k in conv)
print('ok', len(w))
)");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + py + " " + d.path() + " 2>&1").c_str()), 0);
  const std::string import = std::string(MEDSEG_TEST_SOURCE_DIR) + "/scripts/import_nnunet_model.py";
  ASSERT_EQ(
      std::system(("/usr/bin/python3 " + import + " " + d / "nnunet" + " " + d / "back" + " >/dev/null 2>&1").c_str()),
      0);

  // The same model as Python's torch.save writes an nnU-Net checkpoint (numpy logs, torch.device, the optimizer
  // state), brought back by medseg_import_nnunet without Python.
  const std::string resave = d / "resave.py";
  write_file_atomic(resave, R"(
import sys, os, shutil, numpy as np, torch
src, dst = sys.argv[1] + '/nnunet', sys.argv[1] + '/nnunet_py'
os.makedirs(dst + '/fold_0')
for f in ('plans.json', 'dataset.json'): shutil.copy(src + '/' + f, dst + '/' + f)
ck = torch.load(src + '/fold_0/checkpoint_final.pth', map_location='cpu')
ck['init_args']['device'] = torch.device('cpu')
ck['logging'] = {'ema_fg_dice': [np.float64(0.5)], 'epoch_end_timestamps': [1.5]}
ck['_best_ema'] = np.float64(0.5)
ck['optimizer_state'] = {'state': {0: {'momentum_buffer': torch.zeros(3)}}, 'param_groups': [{'lr': 0.01, 'params': [0]}]}
torch.save(ck, dst + '/fold_0/checkpoint_final.pth')
)");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + resave + " " + d.path() + " 2>&1").c_str()), 0);
  r = test::run_cli("medseg_import_nnunet", "-i " + d / "nnunet_py" + " -o " + d / "native", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("alias(es) dropped"), std::string::npos) << r.output;

  // nnU-Net's own zip layout (nnUNetv2_export_model_to_zip) of that folder, installed by medseg_install_model_zip;
  // and the same zip with a checkpoint whose pickle would run a command: refused, nothing left.
  const std::string zip_py = d / "zip.py";
  write_file_atomic(zip_py, R"(
import sys, os, zipfile, torch
d = sys.argv[1]
m = 'Dataset953_Exp/nnUNetTrainer__nnUNetPlans__3d_fullres/'
with zipfile.ZipFile(d + '/nnunet_model.zip', 'w') as z:
    for f in ('plans.json', 'dataset.json', 'fold_0/checkpoint_final.pth'): z.write(d + '/nnunet_py/' + f, m + f)
    z.writestr(m + 'fold_0/debug.json', '{}')
    z.writestr(m + 'fold_0/progress.png', b'not read')
class Evil:
    def __reduce__(self): return (os.system, ('touch ' + d + '/pwned',))
torch.save({'network_weights': {}, 'x': Evil()}, d + '/evil.pth')
with zipfile.ZipFile(d + '/evil.zip', 'w') as z:
    for f in ('plans.json', 'dataset.json'): z.write(d + '/nnunet_py/' + f, m + f)
    z.write(d + '/evil.pth', m + 'fold_0/checkpoint_final.pth')
)");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + zip_py + " " + d.path() + " 2>&1").c_str()), 0);
  r = test::run_cli("medseg_install_model_zip", d / "nnunet_model.zip" + " -o " + d / "installed", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string installed = d / "installed/Dataset953_Exp/nnUNetTrainer__nnUNetPlans__3d_fullres";
  EXPECT_TRUE(fs::exists(installed + "/fold_0/checkpoint_final.ckpt"));
  r = test::run_cli("medseg_install_model_zip", d / "evil.zip" + " -o " + d / "evil_results", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("'posix.system'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "pwned"));
  EXPECT_TRUE(!fs::exists(d / "evil_results") || fs::is_empty(d / "evil_results"))
      << "an install that failed left files";
  fs::create_directories(d / "installed_model");
  fs::rename(installed, d / "installed_model/m");

  for (const char* m : {"model", "back", "native", "installed_model/m"}) {
    // The original model also writes nnU-Net's .npz (--probabilities_format both): the same array.
    const std::string format = std::string(m) == "model" ? " --probabilities_format both" : "";
    r = test::run_cli("medseg_predict",
                      "-i " + d / "raw/Dataset953_Exp/imagesTs -o " + d / (std::string("pred_") + m) + " -m " + d / m +
                          " -f 0 --threads 2 -npp 0 -nps 0 --disable_progress_bar --save_probabilities" + format,
                      env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  int compared = 0;
  for (const auto& e : fs::directory_iterator(d / "pred_model")) {
    const std::string n = e.path().filename().string();
    if (n.size() < 7 || n.substr(n.size() - 7) != ".nii.gz") continue;
    const Volume a = io::read_image(e.path().string()), b = io::read_image(d / ("pred_back/" + n));
    EXPECT_EQ(a.to_double(), b.to_double()) << n;
    const std::string id = n.substr(0, n.size() - 7);
    for (const char* other : {"pred_back/", "pred_native/", "pred_installed_model/m/"})
      EXPECT_EQ(test::read_text(d / ("pred_model/" + id + "_probabilities.npy")),
                test::read_text(d / (other + id + "_probabilities.npy")))
          << "probabilities of " << id << " in " << other;
    std::vector<int64_t> npy_shape, npz_shape;
    EXPECT_EQ(preprocessing::read_npy_float32(d / ("pred_model/" + id + "_probabilities.npy"), npy_shape),
              preprocessing::read_npz_float32(d / ("pred_model/" + id + ".npz"), "probabilities", npz_shape));
    EXPECT_EQ(npy_shape, npz_shape);
    EXPECT_FALSE(fs::exists(d / ("pred_back/" + id + ".npz"))) << "the default format is medseg's alone";
    ++compared;
  }
  EXPECT_EQ(compared, 1);
}
