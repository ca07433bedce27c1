// Writes the seed corpora of the fuzz targets: medseg_fuzz_seeds OUT_DIR writes OUT_DIR/<target>/.
// Seeds are made by the library's own writers (so they track the formats) plus the JSON files
// that the tests already use; tiny on purpose, since small seeds mutate faster.
#include <ATen/ATen.h>
#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/container.h"
#include "core/json_io.h"
#include "core/zip_archive.h"
#include "fingerprint/fingerprint.h"
#include "io/image_io.h"
#include "preprocessing/case_store.h"
#include "sharing/torch_save.h"
#include "support/dicom_writer.h"
#include "training/splits.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

std::string out_root;

std::string slurp(const std::string& path) { return read_file(path); }

// A seed is `prefix` (the harness's mode byte, when it has one) followed by `body`.
void seed(const std::string& target, const std::string& name, const std::string& body, int prefix = -1) {
  fs::create_directories(out_root + "/" + target);
  std::ofstream out(out_root + "/" + target + "/" + name, std::ios::binary);
  if (prefix >= 0) out.put(static_cast<char>(prefix));
  out << body;
}

void copy_json_seeds(const std::string& target, const std::string& dir, const std::string& filename_part) {
  int i = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json" &&
        e.path().filename().string().find(filename_part) != std::string::npos)
      seed(target, "repo_" + std::to_string(i++) + ".json", slurp(e.path().string()));
}

void checkpoint_seeds(const std::string& tmp) {
  checkpoint::TensorArchive a;
  a.meta = {{"note", "seed"}};
  const at::Tensor w = at::arange(6, at::kFloat).reshape({2, 3});
  a.tensors = {{"w", w}, {"w_t", w.t()}, {"b", at::ones({3}, at::kLong)}, {"h", at::zeros({2}, at::kHalf)}};
  checkpoint::write_archive(tmp + "/a.ckpt", a);
  checkpoint::Checkpoint ck;
  ck.epoch = 3;
  ck.weights = {{"weights/conv.weight", at::ones({2, 1, 1, 1, 1})}, {"weights/conv.bias", at::zeros({2})}};
  ck.plans = {{"plans_name", "nnUNetPlans"}};
  ck.dataset = {{"labels", {{"background", 0}, {"a", 1}}}};
  checkpoint::save_checkpoint(tmp + "/c.ckpt", ck);
  for (const char* f : {"a", "c"}) {
    const std::string bytes = slurp(tmp + "/" + f + ".ckpt");
    seed("checkpoint", std::string(f) + "_as_is", bytes, 0);
    seed("checkpoint", std::string(f) + "_trailer_added", bytes.substr(0, bytes.size() - 16), 1);
  }
}

void npy_seeds(const std::string& tmp) {
  preprocessing::CaseProperties p;
  p.id = "case";
  p.shape_after_resampling = {2, 3, 4};
  for (int seg_bytes : {1, 2}) {
    preprocessing::CaseArrays a;
    a.channels = 1;
    a.shape = {2, 3, 4};
    a.data.assign(24, 0.5f);
    a.seg.assign(24, static_cast<int16_t>(seg_bytes == 1 ? 1 : 300));  // 300 needs int16
    const std::string dir = tmp + "/npy" + std::to_string(seg_bytes);
    preprocessing::write_preprocessed_case(dir, p, a, false);
    seed("npy", "data_" + std::to_string(seg_bytes), slurp(dir + "/case.npy"), 0);
    seed("npy", "seg_" + std::to_string(seg_bytes), slurp(dir + "/case_seg.npy"), 1);
    seed("case_properties", "case_" + std::to_string(seg_bytes) + ".json", slurp(dir + "/case.json"));
  }
}

void image_seeds(const std::string& tmp) {
  int i = 0;
  for (PixelType t : {PixelType::UInt8, PixelType::Int16, PixelType::Float32, PixelType::Float64}) {
    Geometry g;
    g.spacing = {0.5, 1.0, 2.0};
    g.origin = {1, 2, 3};
    Volume v(t, {2, 3, 2}, g);
    const std::string path = tmp + "/img" + std::to_string(i) + ".nii";
    io::write_image(path, v);
    const std::string bytes = slurp(path);
    seed("nifti_header", "img" + std::to_string(i), bytes, 0);
    seed("nifti_header", "img" + std::to_string(i) + "_gz", bytes, 1);
    seed("image_read", "img" + std::to_string(i), bytes, 0);
    seed("image_read", "label" + std::to_string(i) + "_gz", bytes, 3);
    ++i;
  }
  Volume flat(PixelType::UInt8, {1, 3, 4});
  flat.geometry().file_dimension = 2;
  io::write_image(tmp + "/flat.nii", flat);
  seed("nifti_header", "flat2d", slurp(tmp + "/flat.nii"), 0);
  seed("image_read", "flat2d", slurp(tmp + "/flat.nii"), 0);
  // 2D natural images as ITK writes them (libpng's writer, ITK's BMP writer): first byte even .png, odd .bmp.
  Volume gray = Volume::from_values(PixelType::UInt8, {1, 5, 7}, flat.geometry(), std::vector<double>(35, 3.0));
  gray.geometry().file_dimension = 2;
  io::write_image(tmp + "/gray.png", gray);
  io::write_image(tmp + "/gray.bmp", gray);
  seed("natural_image", "gray_png", slurp(tmp + "/gray.png"), 0);
  seed("natural_image", "gray_bmp", slurp(tmp + "/gray.bmp"), 1);
}

void json_seeds(const std::string& src) {
  copy_json_seeds("dataset_json", src + "/tests/data", "dataset.json");
  seed(
      "dataset_json", "regions.json",
      R"({"channel_names": {"0": "T2"}, "labels": {"background": 0, "whole": [1, 2], "core": 2}, "regions_class_order": [1, 2], "numTraining": 1, "file_ending": ".nii.gz"})");
  seed(
      "dataset_json", "mapping.json",
      R"({"channel_names": {"0": "CT"}, "labels": {"background": 0, "a": 1, "ignore": 2}, "numTraining": 1, "file_ending": ".nii.gz", "dataset": {"c1": {"images": ["imagesTr/c1_0000.nii.gz"], "label": "labelsTr/c1.nii.gz"}}})");
  copy_json_seeds("plans", src + "/tests/data", "Plans");
  copy_json_seeds("plans", src + "/plans/examples", "Plans");
  copy_json_seeds("fingerprint", src + "/tests/data", "fingerprint");
  copy_json_seeds("trainer_config", src + "/configs", "");
  // Nested 101 levels: one past the bound every JSON reader applies.
  seed("dataset_json", "deep.json", std::string(101, '[') + std::string(101, ']'));
  seed("plans", "deep.json", std::string(101, '[') + std::string(101, ']'));
  training::write_splits(out_root + "/splits/seed.json",
                         training::kfold_splits({"case_000", "case_001", "case_002"}, 3));
}

// Pickles as torch.save writes them: LibTorch's pickle_save of a checkpoint-like dict (data.pkl of its zip).
void torch_pickle_seeds(const std::string& tmp) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  c10::Dict<std::string, at::Tensor> w;
  w.insert("encoder.stem.convs.0.conv.weight", at::arange(12, at::kFloat).reshape({3, 4}));
  w.insert("decoder.seg_layers.0.bias", at::ones({2}, at::kHalf));
  d.insert("network_weights", w);
  d.insert("trainer_name", std::string("nnUNetTrainer"));
  d.insert("inference_allowed_mirroring_axes", c10::ivalue::Tuple::create({int64_t(0), int64_t(1)}));
  d.insert("current_epoch", int64_t(3));
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(d));
  const std::string zip_path = tmp + "/seed.pth";
  std::ofstream(zip_path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  sharing::torch_save(c10::IValue(d), tmp + "/torch_save.pth");  // what medseg_export_nnunet writes
  for (const auto& [file, name] :
       {std::pair{zip_path, "pickle_save.pkl"}, {tmp + "/torch_save.pth", "torch_save.pkl"}}) {
    const ZipReader z(file);
    for (const ZipEntry& e : z.entries())
      if (e.name.size() > 9 && e.name.substr(e.name.size() - 9) == "/data.pkl")
        seed("torch_pickle", name, z.read(e, 1u << 20));
  }
}

}  // namespace

// One-slice series as GDCM writes them (tests/support/dicom_writer.h): signed CT with rescale, MONOCHROME1.
void dicom_seeds(const std::string& tmp) {
  test::DicomSeriesSpec ct;
  ct.slices = 1;
  ct.slope = 2;
  ct.intercept = -1024;
  seed("dicom", "ct_slice.dcm", slurp(test::write_dicom_series(tmp + "/ct", ct).at(0)));
  test::DicomSeriesSpec cr;
  cr.slices = 1;
  cr.photometric = "MONOCHROME1";
  cr.is_signed = false;
  cr.bits_stored = 12;
  seed("dicom", "cr_slice.dcm", slurp(test::write_dicom_series(tmp + "/cr", cr).at(0)));
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: medseg_fuzz_seeds OUT_DIR SOURCE_DIR\n";
    return 2;
  }
  out_root = argv[1];
  const std::string tmp = out_root + "/.tmp";
  fs::create_directories(tmp);
  fs::create_directories(out_root + "/splits");
  try {
    checkpoint_seeds(tmp);
    npy_seeds(tmp);
    image_seeds(tmp);
    json_seeds(argv[2]);
    torch_pickle_seeds(tmp);
    dicom_seeds(tmp);
  } catch (const std::exception& e) {
    std::cerr << "medseg_fuzz_seeds: " << e.what() << "\n";
    return 1;
  }
  fs::remove_all(tmp);
  return 0;
}
