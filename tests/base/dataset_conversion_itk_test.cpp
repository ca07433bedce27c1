// Dataset conversion. medseg_convert_msd_dataset on a small MSD task whose 4D images nibabel writes (an independent
// NIfTI writer): each volume becomes one channel file with its voxels and the 3D geometry, labels are
// copied, dataset.json is nnU-Net's. Needs Debian's python3-nibabel (scripts/install_deps.sh).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

// Task09_Tiny: imagesTr/tiny_001 (4D: x 5, y 4, z 3, 2 modalities; voxel = 1000 t + 100 x + 10 y + z),
// imagesTs/tiny_002 (the same), labelsTr/tiny_001, a "._tiny_001.nii.gz" macOS copy; spacing
// 0.8 x 0.9 x 2.5 and RAS origin (10, 20, 30).
bool write_task(const std::string& task, int modalities_in_file) {
  const std::string script = R"(
import json, os, sys, numpy as np, nibabel as nib
task, t = sys.argv[1], int(sys.argv[2])
for d in ('imagesTr', 'imagesTs', 'labelsTr'): os.makedirs(os.path.join(task, d), exist_ok=True)
aff = np.diag([0.8, 0.9, 2.5, 1.0]); aff[:3, 3] = [10, 20, 30]
x, y, z, c = np.meshgrid(np.arange(5), np.arange(4), np.arange(3), np.arange(t), indexing='ij')
img = (1000 * c + 100 * x + 10 * y + z).astype(np.float32)
for f in ('imagesTr/tiny_001.nii.gz', 'imagesTs/tiny_002.nii.gz', 'imagesTr/._tiny_001.nii.gz'):
    nib.save(nib.Nifti1Image(img, aff), os.path.join(task, f))
nib.save(nib.Nifti1Image((x[..., 0] % 3).astype(np.uint8), aff), os.path.join(task, 'labelsTr/tiny_001.nii.gz'))
json.dump({'name': 'Tiny', 'tensorImageSize': '4D', 'modality': {'0': 'T2', '1': 'ADC'},
           'labels': {'0': 'background', '1': 'PZ', '2': 'TZ'}, 'numTraining': 1, 'numTest': 1,
           'training': [{'image': './imagesTr/tiny_001.nii.gz', 'label': './labelsTr/tiny_001.nii.gz'}],
           'test': ['./imagesTs/tiny_002.nii.gz']}, open(os.path.join(task, 'dataset.json'), 'w'))
)";
  const std::string py = task + ".py";
  write_file_atomic(py, script);
  return std::system(
             ("/usr/bin/python3 " + py + " " + task + " " + std::to_string(modalities_in_file) + " 2>&1").c_str()) == 0;
}

}  // namespace

TEST(ConvertMsdCli, SplitsTheModalitiesAndWritesNnUNetsDatasetJson) {
  if (std::system("/usr/bin/python3 -c 'import nibabel' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3-nibabel";
  test::TempDir d("msd");
  ASSERT_TRUE(write_task(d / "Task09_Tiny", 2));
  const std::string env = "MEDSEG_RAW=" + d / "raw";
  fs::create_directories(d / "raw");
  auto r = test::run_cli("medseg_convert_msd_dataset", "-i " + d / "Task09_Tiny/", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = d / "raw/Dataset009_Tiny";
  for (int t = 0; t < 2; ++t) {
    const Volume v = io::read_image(out + "/imagesTr/tiny_001_000" + std::to_string(t) + ".nii.gz");
    ASSERT_EQ(v.shape(), (std::array<int64_t, 3>{3, 4, 5}));
    EXPECT_EQ(v.at(0, 0, 0), 1000.0 * t);
    EXPECT_EQ(v.at(2, 3, 4), 1000.0 * t + 400 + 30 + 2);  // z 2, y 3, x 4
    EXPECT_EQ(v.at(1, 2, 3), 1000.0 * t + 300 + 20 + 1);
    EXPECT_NEAR(v.geometry().spacing[0], 0.8, 1e-6);   // NIfTI keeps float32
    EXPECT_NEAR(v.geometry().spacing[1], 0.9, 1e-6);   // NIfTI keeps float32
    EXPECT_NEAR(v.geometry().spacing[2], 2.5, 1e-6);   // NIfTI keeps float32
    EXPECT_NEAR(v.geometry().origin[0], -10.0, 1e-6);  // NIfTI keeps float32  // RAS (10, 20, 30) is LPS (-10, -20, 30)
    EXPECT_NEAR(v.geometry().origin[1], -20.0, 1e-6);  // NIfTI keeps float32
    EXPECT_NEAR(v.geometry().origin[2], 30.0, 1e-6);   // NIfTI keeps float32
  }
  EXPECT_TRUE(fs::exists(out + "/imagesTs/tiny_002_0001.nii.gz"));
  EXPECT_FALSE(fs::exists(out + "/imagesTr/tiny_001_0002.nii.gz"));
  EXPECT_FALSE(fs::exists(out + "/imagesTr/._tiny_001_0000.nii.gz"));
  EXPECT_EQ(io::read_label(out + "/labelsTr/tiny_001.nii.gz").at(0, 0, 2), 2);
  const auto dj = nlohmann::ordered_json::parse(read_file(out + "/dataset.json"));
  EXPECT_EQ(dj["labels"].dump(), R"({"background":0,"PZ":1,"TZ":2})");
  EXPECT_EQ(dj["channel_names"].dump(), R"({"0":"T2","1":"ADC"})");
  EXPECT_EQ(dj["file_ending"], ".nii.gz");
  EXPECT_EQ(dj["numTraining"], 1);
  EXPECT_FALSE(dj.contains("training") || dj.contains("test") || dj.contains("modality"));

  // The id is taken now; --overwrite_id gives another.
  r = test::run_cli("medseg_convert_msd_dataset", "-i " + d / "Task09_Tiny", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("Dataset009_Tiny"), std::string::npos) << r.output;
  r = test::run_cli("medseg_convert_msd_dataset", "-i " + d / "Task09_Tiny --overwrite_id 42", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "raw/Dataset042_Tiny/imagesTr/tiny_001_0001.nii.gz"));
}

TEST(ConvertMsdCli, AnImageWithTheWrongNumberOfModalitiesLeavesNothing) {
  if (std::system("/usr/bin/python3 -c 'import nibabel' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3-nibabel";
  test::TempDir d("msd_bad");
  ASSERT_TRUE(write_task(d / "Task03_Odd", 3));  // 3 volumes, 2 modalities
  fs::create_directories(d / "raw");
  auto r = test::run_cli("medseg_convert_msd_dataset", "-i " + d / "Task03_Odd", "MEDSEG_RAW=" + d / "raw");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("holds 3 volume(s) but dataset.json names 2 modalities"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(d / "raw"));
  r = test::run_cli("medseg_convert_msd_dataset", "-i " + d / "raw", "MEDSEG_RAW=" + d / "raw");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("TaskXX_Name"), std::string::npos) << r.output;
}

// nnUNetv2_convert_old_nnUNet_dataset: the v1 folders copied, dataset.json converted (v1's keys
// tensorImageSize, numTest, training, test dropped; labels inverted in the file's order).
TEST(ConvertOldNnUNetCli, CopiesTheTaskAndConvertsDatasetJson) {
  test::TempDir d("v1");
  const std::string task = d / "Task017_Abdomen";
  for (const char* sub : {"imagesTr", "labelsTr", "imagesTs"}) fs::create_directories(task + "/" + sub);
  write_file_atomic(task + "/imagesTr/abd_001_0000.nii.gz", "image bytes");
  write_file_atomic(task + "/labelsTr/abd_001.nii.gz", "label bytes");
  write_file_atomic(task + "/imagesTs/abd_101_0000.nii.gz", "test bytes");
  write_file_atomic(task + "/dataset.json", R"({"name": "Abdomen", "tensorImageSize": "3D", "modality": {"0": "CT"},
    "labels": {"0": "background", "2": "spleen", "1": "liver"}, "numTraining": 1, "numTest": 1,
    "training": [{"image": "./imagesTr/abd_001.nii.gz", "label": "./labelsTr/abd_001.nii.gz"}],
    "test": ["./imagesTs/abd_101.nii.gz"]})");
  fs::create_directories(d / "raw");
  const std::string env = "MEDSEG_RAW=" + d / "raw";
  auto r = test::run_cli("medseg_convert_old_nnunet_dataset", task + " Dataset017_Abdomen", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = d / "raw/Dataset017_Abdomen";
  EXPECT_EQ(read_file(out + "/imagesTr/abd_001_0000.nii.gz"), "image bytes");
  EXPECT_EQ(read_file(out + "/labelsTr/abd_001.nii.gz"), "label bytes");
  EXPECT_EQ(read_file(out + "/imagesTs/abd_101_0000.nii.gz"), "test bytes");
  EXPECT_EQ(read_file(out + "/dataset.json"),
            nlohmann::ordered_json::parse(R"({"name": "Abdomen", "channel_names": {"0": "CT"},
              "labels": {"background": 0, "spleen": 2, "liver": 1}, "numTraining": 1, "file_ending": ".nii.gz"})")
                .dump(4));
  r = test::run_cli("medseg_convert_old_nnunet_dataset", task + " Dataset017_Abdomen", env);  // exists now
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("exists already"), std::string::npos) << r.output;
  r = test::run_cli("medseg_convert_old_nnunet_dataset", task + " Abdomen", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("DatasetXXX_Name"), std::string::npos) << r.output;
  r = test::run_cli("medseg_convert_old_nnunet_dataset", task + " ../Dataset018_Out", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(fs::exists(d / "Dataset018_Out"));
  fs::remove_all(task + "/labelsTr");
  r = test::run_cli("medseg_convert_old_nnunet_dataset", task + " Dataset019_Abdomen", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("labelsTr"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "raw/Dataset019_Abdomen"));
}

// Issue 42: a link in a v1 task copied a tree from outside it; a million labels hung the MSD conversion;
// --np 3000 aborted it and left its staging folder.
TEST(ConvertHostile, LinksLabelFloodsAndThreadFloodsAreBounded) {
  test::TempDir d("conv_hostile");
  const std::string task = d / "Task017_Abdomen";
  for (const char* sub : {"imagesTr", "labelsTr", "imagesTs"}) fs::create_directories(task + "/" + sub);
  write_file_atomic(task + "/imagesTr/abd_001_0000.nii.gz", "image bytes");
  write_file_atomic(task + "/labelsTr/abd_001.nii.gz", "label bytes");
  write_file_atomic(task + "/dataset.json", R"({"name": "Abdomen", "modality": {"0": "CT"},
    "labels": {"0": "background", "1": "liver"}, "numTraining": 1})");
  fs::create_directories(d / "elsewhere/tree");
  write_file_atomic(d / "elsewhere/tree/big.bin", std::string(1 << 20, 'x'));
  fs::create_directory_symlink(d / "elsewhere", task + "/imagesTr/linked");
  fs::create_directories(d / "raw");
  const std::string env = "MEDSEG_RAW=" + d / "raw";
  auto r = test::run_cli("medseg_convert_old_nnunet_dataset", task + " Dataset017_Abdomen", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("imagesTr/linked: is a symbolic link"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(d / "raw")) << "the refused conversion left files";
  fs::remove(task + "/imagesTr/linked");
  fs::create_symlink(d / "elsewhere/tree/big.bin", task + "/labelsTr/abd_002.nii.gz");
  r = test::run_cli("medseg_convert_old_nnunet_dataset", task + " Dataset017_Abdomen", env);
  EXPECT_NE(r.output.find("labelsTr/abd_002.nii.gz: is a symbolic link"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(d / "raw"));

  // MSD: a dataset.json of a million labels (about 20 MB) is refused in seconds, naming the bound.
  const std::string msd = d / "Task05_Flood";
  for (const char* sub : {"imagesTr", "labelsTr", "imagesTs"}) fs::create_directories(msd + "/" + sub);
  std::string labels;
  for (int i = 0; i < 1000000; ++i)
    labels += (i ? ",\"" : "\"") + std::to_string(i) + "\":\"l" + std::to_string(i) + "\"";
  write_file_atomic(msd + "/dataset.json", "{\"name\": \"Flood\", \"modality\": {\"0\": \"CT\"}, \"labels\": {" +
                                               labels + "}, \"numTraining\": 0}");
  const auto t0 = std::chrono::steady_clock::now();
  r = test::run_cli("/usr/bin/timeout", "60 " + test::bin_dir() + "/medseg_convert_msd_dataset -i " + msd, env);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("has 1000000 entries; medseg reads up to 32767"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(d / "raw"));

  // A label on another grid than its image was copied as it was.
  io::write_image(msd + "/imagesTr/c_001.nii.gz", Volume(PixelType::Float32, {3, 4, 5}));
  io::write_image(msd + "/labelsTr/c_001.nii.gz", Volume(PixelType::UInt8, {3, 4, 6}));
  write_file_atomic(msd + "/dataset.json", R"({"name": "Flood", "modality": {"0": "CT"},
    "labels": {"0": "background", "1": "x"}, "numTraining": 1})");
  r = test::run_cli("medseg_convert_msd_dataset", "-i " + msd, env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("labelsTr/c_001.nii.gz: has shape 6 x 4 x 3 but its image"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(d / "raw"));
  io::write_image(msd + "/labelsTr/c_001.nii.gz", Volume(PixelType::UInt8, {3, 4, 5}));

  // --np 3000 on two cores: threads are bounded, the conversion works.
  write_file_atomic(msd + "/dataset.json", R"({"name": "Flood", "modality": {"0": "CT"},
    "labels": {"0": "background", "1": "x"}, "numTraining": 1})");
  r = test::run_cli("medseg_convert_msd_dataset", "-i " + msd + " --np 3000", env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "raw/Dataset005_Flood/dataset.json"));
}
