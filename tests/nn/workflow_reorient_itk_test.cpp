// A dataset read through nnU-Net's NibabelIOWithReorient, end to end: files whose axes are permuted and
// flipped (written by nibabel) are planned, preprocessed, trained on and predicted. Preprocessing sees the
// case in RAS order (its spacing is RAS's), and each prediction is written back in its input's own
// orientation: the prediction of the permuted file (segmentation and probabilities), reoriented by nibabel,
// equals the prediction of the same case saved in RAS order. Needs python3-nibabel.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "core/atomic_writer.h"
#include "core/json_io.h"
#include "io/image_io.h"
#include "preprocessing/case_store.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// raw/Dataset953_Reo: 5 cases, index axes x -> -S, y -> +R, z -> -A; a bright box labelled 1.
// in/ holds case 0 as stored, ras/ the same case as nibabel reorients it.
void write_dataset(const std::string& d) {
  const std::string script = R"(
import sys, os, json, numpy as np, nibabel as nib
from nibabel.orientations import io_orientation
d = sys.argv[1]
raw = os.path.join(d, 'raw', 'Dataset953_Reo')
for f in ('imagesTr', 'labelsTr'): os.makedirs(os.path.join(raw, f), exist_ok=True)
for f in ('in', 'ras'): os.makedirs(os.path.join(d, f), exist_ok=True)
cols = np.array([[0, 0, -1], [1, 0, 0], [0, -1, 0]], dtype=float).T
aff = np.eye(4); aff[:3, :3] = cols @ np.diag([1.0, 1.2, 1.5]); aff[:3, 3] = [5, -3, 8]
rng = np.random.default_rng(7)
for i in range(5):
    img = rng.normal(0, 1, (14, 18, 12)).astype(np.float32)
    seg = np.zeros(img.shape, np.uint8)
    a = 2 + i % 3
    seg[a:a + 6, 4:12, 3:8] = 1
    img[seg > 0] += 4
    nib.save(nib.Nifti1Image(img, aff), os.path.join(raw, 'imagesTr', f'reo_{i:03d}_0000.nii.gz'))
    nib.save(nib.Nifti1Image(seg, aff), os.path.join(raw, 'labelsTr', f'reo_{i:03d}.nii.gz'))
    if i == 0:
        im = nib.Nifti1Image(img, aff)
        nib.save(im, os.path.join(d, 'in', 'reo_000_0000.nii.gz'))
        nib.save(im.as_reoriented(io_orientation(aff)), os.path.join(d, 'ras', 'reo_000_0000.nii.gz'))
json.dump({'channel_names': {'0': 'MR'}, 'labels': {'background': 0, 'box': 1}, 'numTraining': 5,
           'file_ending': '.nii.gz', 'overwrite_image_reader_writer': 'NibabelIOWithReorient'},
          open(os.path.join(raw, 'dataset.json'), 'w'))
)";
  write_file_atomic(d + "/write.py", script);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + d + "/write.py " + d + " 2>&1").c_str()), 0);
}

// 0 when nibabel's reorientation of the prediction of in/ (segmentation and probabilities) equals the
// prediction of ras/, and the former has the input file's affine.
int compare_with_nibabel(const std::string& d) {
  const std::string script = R"(
import sys, os, numpy as np, nibabel as nib
from nibabel.orientations import io_orientation, apply_orientation
d = sys.argv[1]
p, r = nib.load(d + '/out_in/reo_000.nii.gz'), nib.load(d + '/out_ras/reo_000.nii.gz')
i = nib.load(d + '/in/reo_000_0000.nii.gz')
assert np.allclose(p.affine, i.affine, atol=1e-4), (p.affine, i.affine)
ornt = io_orientation(p.affine)
assert np.array_equal(np.asarray(p.as_reoriented(ornt).dataobj), np.asarray(r.dataobj)), 'segmentations differ'
pa, ra = np.load(d + '/out_in/reo_000_probabilities.npy'), np.load(d + '/out_ras/reo_000_probabilities.npy')
assert pa.shape[0] == 2 and pa[1].max() > pa[1].min(), 'trivial probabilities'
for k in range(pa.shape[0]):  # (Z, Y, X) arrays: to nibabel's (x, y, z), then reoriented
    a = apply_orientation(pa[k].transpose(2, 1, 0), ornt)
    assert np.allclose(a, ra[k].transpose(2, 1, 0), atol=1e-5), ('probabilities differ', k, np.abs(a - ra[k].transpose(2, 1, 0)).max())
)";
  write_file_atomic(d + "/compare.py", script);
  return std::system(("/usr/bin/python3 " + d + "/compare.py " + d + " 2>&1").c_str());
}

}  // namespace

TEST(WorkflowReorient, TrainsOnNibabelsArraysAndPredictsInTheInputsOrientation) {
  if (std::system("/usr/bin/python3 -c 'import nibabel' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3-nibabel";
  test::TempDir dir("reorient_wf");
  const std::string d = dir.path();
  write_dataset(d);
  const std::string env = "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre MEDSEG_RESULTS=" + d + "/results";
  auto r = test::run_cli("medseg_plan_and_preprocess", "-d 953 -c 3d_fullres --np 2 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json plans = read_json(d + "/pre/Dataset953_Reo/nnUNetPlans.json");
  EXPECT_EQ(plans.at("image_reader_writer"), "NibabelIOWithReorient");
  // Spacing in nibabel's RAS order, reversed as nnU-Net stores it: R 1.2, A 1.5, S 1.0 -> (z, y, x) = (1.0, 1.5, 1.2).
  const json props = read_json(d + "/pre/Dataset953_Reo/nnUNetPlans_3d_fullres/reo_000.json");
  const preprocessing::CaseProperties p = preprocessing::case_properties_from_json(props, "reo_000.json");
  ASSERT_TRUE(p.reorientation.has_value());
  EXPECT_NEAR(p.original_spacing[0], 1.0, 1e-5);
  EXPECT_NEAR(p.original_spacing[1], 1.5, 1e-5);
  EXPECT_NEAR(p.original_spacing[2], 1.2, 1e-5);

  r = test::run_cli("medseg_train",
                    "953 3d_fullres 0 --epochs 2 --iters-per-epoch 3 --val-iters-per-epoch 1 "
                    "--num-workers 1 --threads 2 --no_pbar",
                    env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* which : {"in", "ras"}) {
    r = test::run_cli(
        "medseg_predict",
        "-i " + d + "/" + which + " -o " + d + "/out_" + which +
            " -d 953 -c 3d_fullres -f 0 --threads 2 --disable_tta --save_probabilities --disable_progress_bar",
        env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_EQ(compare_with_nibabel(d), 0);
  // The final validation wrote its segmentations in the files' orientation too.
  const std::string val = d + "/results/Dataset953_Reo/nnUNetTrainer__nnUNetPlans__3d_fullres/fold_0/validation";
  int checked = 0;
  for (const auto& e : fs::directory_iterator(val)) {
    if (e.path().string().find(".nii.gz") == std::string::npos) continue;
    EXPECT_EQ(io::read_image(e.path().string()).shape(), (std::array<int64_t, 3>{12, 18, 14})) << e.path();
    ++checked;
  }
  EXPECT_EQ(checked, 1);
}
