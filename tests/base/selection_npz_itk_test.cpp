// nnU-Net's probability files (.npz, key "probabilities") on both sides: what preprocessing/npz.h writes numpy
// loads, what numpy's savez_compressed writes medseg reads, and medseg_ensemble averages nnU-Net prediction
// folders (CASE.npz beside CASE.nii.gz and dataset.json, written here by numpy and nibabel), alone or mixed with
// medseg's CASE_probabilities.npy/.json, into the argmax numpy computes. Needs python3-numpy and python3-nibabel.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/json_io.h"
#include "io/image_io.h"
#include "preprocessing/npy.h"
#include "preprocessing/npz.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

bool npz_python(const std::string& dir, const std::string& body) {
  write_file_atomic(dir + "/gen.py",
                    "import sys, json, os, numpy as np, nibabel as nib\nd = sys.argv[1]\n" + body + "\n");
  return std::system(("/usr/bin/python3 " + dir + "/gen.py " + dir + " 2>&1").c_str()) == 0;
}

bool have_python() { return std::system("/usr/bin/python3 -c 'import numpy, nibabel' >/dev/null 2>&1") == 0; }

}  // namespace

TEST(Npz, WhatMedsegWritesNumpyLoadsAndTheOtherWayRound) {
  if (!have_python()) GTEST_SKIP() << "no python3-numpy / python3-nibabel";
  test::TempDir d("npz");
  std::vector<float> v(2 * 3 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i);
  preprocessing::write_npz_float32(d / "m.npz", "probabilities", {2, 3, 4}, v.data());
  ASSERT_TRUE(npz_python(d.path(), R"(
a = np.load(d + '/m.npz')['probabilities']
assert a.dtype == np.float32 and a.shape == (2, 3, 4), (a.dtype, a.shape)
assert (a.ravel() == 0.25 * np.arange(24)).all()
np.savez_compressed(d + '/n.npz', probabilities=(np.arange(30, dtype=np.float32) / 7).reshape(5, 3, 2))
np.savez_compressed(d + '/f64.npz', probabilities=np.zeros((2, 2)))
)"));
  std::vector<int64_t> shape;
  const std::vector<float> n = preprocessing::read_npz_float32(d / "n.npz", "probabilities", shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{5, 3, 2}));
  for (size_t i = 0; i < n.size(); ++i) ASSERT_FLOAT_EQ(n[i], static_cast<float>(i) / 7.0f);
  try {
    preprocessing::read_npz_float32(d / "n.npz", "logits", shape);
    ADD_FAILURE() << "a missing key was read";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("no array 'logits'"), std::string::npos) << e.what();
  }
  try {
    preprocessing::read_npz_float32(d / "f64.npz", "probabilities", shape);
    ADD_FAILURE() << "float64 was read as float32";
  } catch (const FileError& e) { EXPECT_NE(std::string(e.what()).find("<f8"), std::string::npos) << e.what(); }
}

TEST(EnsembleNpz, NnUNetFoldersAloneOrMixedWithMedsegsAverageToNumpysArgmax) {
  if (!have_python()) GTEST_SKIP() << "no python3-numpy / python3-nibabel";
  test::TempDir d("ensnpz");
  // Folders A and B as nnUNetv2_predict --save_probabilities leaves them (the .pkl aside); C holds B's
  // probabilities in medseg's format. expected.npy: the label values of argmax((A + B) / 2).
  ASSERT_TRUE(npz_python(d.path(), R"(
rng = np.random.default_rng(4)
shape = (3, 2, 3, 4)  # classes, z, y, x
ds = {'channel_names': {'0': 'CT'}, 'labels': {'background': 0, 'liver': 1, 'tumor': 2}, 'numTraining': 1,
      'file_ending': '.nii.gz'}
aff = np.diag([0.5, 0.6, 0.7, 1.0]); aff[:3, 3] = [1, 2, 3]
probs = {}
for f in ('A', 'B'):
    os.makedirs(d + '/' + f)
    json.dump(ds, open(d + '/' + f + '/dataset.json', 'w'))
    p = rng.random(shape).astype(np.float32); p /= p.sum(0, keepdims=True)
    probs[f] = p
    np.savez_compressed(d + '/' + f + '/case1.npz', probabilities=p)
    nib.save(nib.Nifti1Image(p.argmax(0).transpose(2, 1, 0).astype(np.uint8), aff), d + '/' + f + '/case1.nii.gz')
os.makedirs(d + '/C')
json.dump(ds, open(d + '/C/dataset.json', 'w'))
np.save(d + '/C/case1_probabilities.npy', probs['B'])
# nibabel's RAS affine is LPS-flipped for ITK: x and y directions -1, origin (-1, -2, 3).
json.dump({'format': 'medseg-probabilities', 'version': 1, 'kind': 'softmax over labels', 'class_values': [0, 1, 2],
           'shape': list(shape), 'spacing': [0.5, 0.6, 0.7], 'origin': [-1.0, -2.0, 3.0],
           'direction': [-1, 0, 0, 0, -1, 0, 0, 0, 1], 'file_dimension': 3}, open(d + '/C/case1_probabilities.json', 'w'))
np.save(d + '/expected.npy', ((probs['A'] + probs['B']) / 2).argmax(0).astype(np.float32))
)"));
  std::vector<int64_t> shape;
  const std::vector<float> expected = preprocessing::read_npy_float32(d / "expected.npy", shape);
  const Volume reference = io::read_image(d / "A/case1.nii.gz");
  for (const char* other : {"B", "C"}) {
    SCOPED_TRACE(other);
    const std::string out = d / (std::string("out_") + other);
    const auto r = test::run_cli("medseg_ensemble", "-i " + d / "A" + " " + d / other + " -o " + out + " --np 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const Volume seg = io::read_image(out + "/case1.nii.gz");
    ASSERT_EQ(seg.shape(), (std::array<int64_t, 3>{2, 3, 4}));
    EXPECT_EQ(seg.to_float(), expected);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(seg.geometry().spacing[i], reference.geometry().spacing[i], 1e-6);
  }
  // Without the segmentation beside it, an .npz has no geometry: named, nothing written.
  fs::remove(d / "B/case1.nii.gz");
  const auto r = test::run_cli("medseg_ensemble", "-i " + d / "A" + " " + d / "B" + " -o " + d / "out_bad");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("case1.npz"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("case1.nii.gz"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "out_bad"));
}
