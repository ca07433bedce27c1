#include "selection/ensemble.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/path_overlap.h"
#include "core/json_io.h"
#include "core/output_folder.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "core/volume.h"
#include "io/image_folder.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "io/output_classes.h"
#include "preprocessing/npy.h"
#include "preprocessing/npz.h"

namespace fs = std::filesystem;

namespace medseg::selection {
namespace {

constexpr const char* kSuffix = "_probabilities.npy";

struct Probabilities {
  json meta;
  std::vector<int64_t> shape;  // (K, Z, Y, X)
  std::vector<float> values;
};

// Every value a probability: NaN, Inf, a negative value or one above 1 would average into a wrong
// segmentation without a word.
void check_probability_values(const Probabilities& p, const std::string& file) {
  const size_t per_class = p.values.size() / static_cast<size_t>(std::max<int64_t>(p.shape[0], 1));
  for (size_t i = 0; i < p.values.size(); ++i) {
    const float v = p.values[i];
    if (v >= 0.0f && v <= 1.0f) continue;  // NaN fails both
    throw FileError(file, concat("holds ", v, " (class ", i / per_class, ", voxel ", i % per_class,
                                 "), not a probability in [0, 1]"));
  }
}

// nnU-Net's CASE.npz (key "probabilities", no pickle read): its classes come from the folder's dataset.json
// (nnUNetv2_predict writes it there), its geometry from the segmentation CASE<file_ending> beside it.
Probabilities read_nnunet_probabilities(const std::string& folder, const std::string& id) {
  const std::string npz = (fs::path(folder) / (id + ".npz")).string();
  const fs::path dj = fs::path(folder) / "dataset.json";
  MEDSEG_CHECK_FILE(fs::is_regular_file(dj), npz,
                    "an nnU-Net probabilities file needs the folder's dataset.json (its classes), which is missing");
  const io::DatasetInfo ds = io::load_dataset_info(folder);
  const io::OutputClasses classes = io::output_classes(ds, dj.string());
  const std::string seg_file = (fs::path(folder) / (id + ds.file_ending)).string();
  MEDSEG_CHECK_FILE(fs::is_regular_file(seg_file), npz, "an nnU-Net probabilities file needs its segmentation ",
                    seg_file, " (its geometry), which is missing");
  const Volume seg = io::read_image(seg_file);
  Probabilities p;
  p.values = preprocessing::read_npz_float32(npz, "probabilities", p.shape);
  const auto& s = seg.shape();
  const std::vector<int64_t> want{static_cast<int64_t>(classes.values.size()), s[0], s[1], s[2]};
  MEDSEG_CHECK_FILE(p.shape == want, npz, "probabilities of shape ", json(p.shape).dump(),
                    "; its segmentation and dataset.json make ", json(want).dump());
  p.meta = io::probabilities_meta(classes, p.shape, seg.geometry());
  check_probability_values(p, npz);
  return p;
}

Probabilities read_probabilities(const std::string& folder, const std::string& id) {
  const std::string base = (fs::path(folder) / id).string();
  if (!fs::exists(base + kSuffix) && fs::exists(base + ".npz")) return read_nnunet_probabilities(folder, id);
  Probabilities p;
  p.meta = read_json(base + "_probabilities.json");
  MEDSEG_CHECK_FILE(p.meta.value("format", "") == "medseg-probabilities", base + "_probabilities.json",
                    "not a medseg-probabilities file");
  p.values = preprocessing::read_npy_float32(base + kSuffix, p.shape);
  MEDSEG_CHECK_FILE(p.shape.size() == 4 && p.meta.value("shape", json()) == json(p.shape), base + kSuffix, "shape ",
                    json(p.shape).dump(), " does not match its .json (", p.meta.value("shape", json()).dump(), ")");
  check_probability_values(p, base + kSuffix);
  return p;
}

// The keys that must agree for probabilities to be averaged. Geometry within 1e-5: a NIfTI header (where an
// nnU-Net .npz takes it from) keeps float32.
std::string disagreement(const json& a, const json& b) {
  for (const char* k : {"kind", "class_values", "shape"})
    if (a.value(k, json()) != b.value(k, json()))
      return std::string(k) + " " + b.value(k, json()).dump() + " vs " + a.value(k, json()).dump();
  for (const char* k : {"spacing", "origin", "direction"}) {
    const json &x = a.value(k, json()), &y = b.value(k, json());
    bool same = x.is_array() && y.is_array() && x.size() == y.size();
    for (size_t i = 0; same && i < x.size(); ++i)
      same = std::abs(x[i].get<double>() - y[i].get<double>()) <= 1e-5 * std::max(1.0, std::abs(x[i].get<double>()));
    if (!same) return std::string(k) + " " + y.dump() + " vs " + x.dump();
  }
  return "";
}

Volume segmentation_of(const Probabilities& p) {
  const json& m = p.meta;
  const auto values = m.at("class_values").get<std::vector<int>>();
  const bool regions = m.value("kind", "") == "sigmoid per region";
  Geometry g;
  g.spacing = m.at("spacing").get<std::array<double, 3>>();
  g.origin = m.at("origin").get<std::array<double, 3>>();
  g.direction = m.at("direction").get<std::array<double, 9>>();
  g.file_dimension = m.value("file_dimension", 3);
  const int max_value = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  const auto k = static_cast<size_t>(p.shape[0]);
  const size_t n = p.values.size() / std::max<size_t>(k, 1);
  std::vector<double> seg(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    if (regions) {
      for (size_t c = 0; c < k; ++c)  // later regions win, as regions_class_order says
        if (p.values[c * n + i] > 0.5f) seg[i] = values[c];
    } else {
      size_t best = 0;
      for (size_t c = 1; c < k; ++c)
        if (p.values[c * n + i] > p.values[best * n + i]) best = c;
      seg[i] = values[best];
    }
  }
  return Volume::from_values(max_value > 255 ? PixelType::UInt16 : PixelType::UInt8,
                             {p.shape[1], p.shape[2], p.shape[3]}, g, seg);
}

// Two spellings of one folder (A and A/, or ./A) would average a folder with itself.
void refuse_same_folder_twice(const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t j = i + 1; j < inputs.size(); ++j)
      MEDSEG_CHECK(!fs::equivalent(inputs[i], inputs[j], ec), "-i: ", inputs[i], " and ", inputs[j],
                   " are the same folder; an ensemble averages the predictions of different folders");
}

// Cases with medseg's CASE_probabilities.npy or nnU-Net's CASE.npz.
std::set<std::string> case_ids(const std::string& folder) {
  MEDSEG_CHECK_FILE(fs::is_directory(folder), folder, "input folder not found");
  std::set<std::string> ids;
  for (const auto& n : io::files_with_ending(folder, kSuffix))
    ids.insert(n.substr(0, n.size() - std::string(kSuffix).size()));
  for (const auto& n : io::files_with_ending(folder, ".npz")) ids.insert(n.substr(0, n.size() - 4));
  return ids;
}

}  // namespace

int64_t ensemble_folders(const EnsembleOptions& o) {
  MEDSEG_CHECK(o.inputs.size() >= 2, "ensembling needs at least two input folders");
  const std::set<std::string> ids = case_ids(o.inputs[0]);
  refuse_same_folder_twice(o.inputs);
  MEDSEG_CHECK_FILE(
      !ids.empty(), o.inputs[0],
      "holds no CASE_probabilities.npy or CASE.npz (predict with --save_probabilities, or validate with --npz)");
  for (size_t f = 1; f < o.inputs.size(); ++f) {
    const auto other = case_ids(o.inputs[f]);
    for (const auto& id : ids)
      MEDSEG_CHECK_FILE(other.count(id), (fs::path(o.inputs[f]) / (id + kSuffix)).string(),
                        "missing: every folder must hold the same cases");
    for (const auto& id : other)
      MEDSEG_CHECK_FILE(ids.count(id), (fs::path(o.inputs[0]) / (id + kSuffix)).string(),
                        "missing: every folder must hold the same cases");
  }
  for (const auto& in : o.inputs) check_output_apart(o.output, in, "input folder");

  const std::vector<std::string> list(ids.begin(), ids.end());
  NewFolderGuard guard(o.output);
  ProgressBar bar("ensemble", static_cast<int64_t>(list.size()));
  parallel_for(static_cast<int64_t>(list.size()), o.threads, [&](int64_t i) {
    const std::string& id = list[static_cast<size_t>(i)];
    Probabilities sum = read_probabilities(o.inputs[0], id);
    for (size_t f = 1; f < o.inputs.size(); ++f) {
      const Probabilities p = read_probabilities(o.inputs[f], id);
      const std::string why = disagreement(sum.meta, p.meta);
      MEDSEG_CHECK_FILE(why.empty(), (fs::path(o.inputs[f]) / (id + "_probabilities.json")).string(),
                        "cannot be averaged with ", o.inputs[0], "'s: ", why);
      for (size_t j = 0; j < sum.values.size(); ++j) sum.values[j] += p.values[j];
    }
    const float scale = 1.0f / static_cast<float>(o.inputs.size());
    for (float& v : sum.values) v *= scale;
    const std::string base = (fs::path(o.output) / id).string();
    if (o.save_probabilities) {
      preprocessing::write_npy(base + kSuffix, "<f4", sum.shape, sum.values.data(), sum.values.size() * sizeof(float));
      write_json(base + "_probabilities.json", sum.meta);
    }
    io::write_image(base + o.file_ending, segmentation_of(sum));
    bar.tick();
  });
  bar.finish();
  io::copy_dataset_jsons(o.inputs[0], o.output);
  guard.keep();
  return static_cast<int64_t>(list.size());
}

}  // namespace medseg::selection
