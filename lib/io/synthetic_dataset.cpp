#include "io/synthetic_dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/output_folder.h"
#include "core/parallel.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core/volume.h"
#include "io/image_formats.h"
#include "io/image_io.h"

namespace fs = std::filesystem;

namespace medseg::io {
namespace {

// Portable generator: splitmix64 so that output is identical on every platform and compiler.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  int64_t integer(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(uniform() * static_cast<double>(hi - lo + 1));
  }
  double normal() {  // Box-Muller
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t s_;
};

std::array<double, 9> random_rotation(Rng& r) {
  // Rotation from a random unit quaternion, then random axis flips (LAS/RAS/LPS-like cases).
  double q[4];
  double n = 0;
  for (double& x : q) {
    x = r.normal();
    n += x * x;
  }
  n = std::sqrt(n);
  for (double& x : q) x /= n;
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  std::array<double, 9> m{1 - 2 * (y * y + z * z), 2 * (x * y - z * w),     2 * (x * z + y * w),
                          2 * (x * y + z * w),     1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                          2 * (x * z - y * w),     2 * (y * z + x * w),     1 - 2 * (x * x + y * y)};
  for (int c = 0; c < 3; ++c)
    if (r.uniform() < 0.5)
      for (int row = 0; row < 3; ++row) m[row * 3 + c] = -m[row * 3 + c];
  return m;
}

// A 2D file has a 2x2 direction: a unit rotation (or reflection) from the x column of `m`.
std::array<double, 9> in_plane(const std::array<double, 9>& m) {
  const double n = std::hypot(m[0], m[3]);
  if (n < 1e-6) return {1, 0, 0, 0, 1, 0, 0, 0, 1};
  const double c = m[0] / n, s = m[3] / n, flip = m[8] < 0 ? -1.0 : 1.0;
  return {c, -s * flip, 0, s, c * flip, 0, 0, 0, 1};
}

struct Shape {
  int label;
  bool box;
  double c[3], rad[3];  // z, y, x in voxels
};

std::string channel_name(const SyntheticDatasetOptions& o, int c) {
  if (c < static_cast<int>(o.channel_names.size())) return o.channel_names[c];
  return c == 0 ? "MRI" : "MRI" + std::to_string(c);
}

// The case's grid: its shape and geometry (jittered spacing, random origin and, if asked, direction).
Geometry case_geometry(Rng& r, const SyntheticDatasetOptions& o, std::array<int64_t, 3>& shape) {
  for (int a = 0; a < 3; ++a) shape[a] = r.integer(o.min_shape[a], o.max_shape[a]);
  Geometry g;
  for (int a = 0; a < 3; ++a) {
    g.spacing[a] = o.spacing[a] * (1.0 + o.spacing_jitter * r.uniform(-1.0, 1.0));
    g.origin[a] = r.uniform(-100.0, 100.0);
  }
  if (o.random_direction) g.direction = random_rotation(r);
  if (o.two_d) {
    shape[0] = 1;
    g.file_dimension = 2;
    g.spacing[2] = g.slice_spacing_2d();  // what reading the file back gives
    g.origin[2] = 0.0;
    if (o.random_direction) g.direction = in_plane(g.direction);
  }
  return g;
}

// One or two objects (boxes and ellipsoids) per label, near the body's centre `bc` (radii `br`).
std::vector<Shape> case_objects(Rng& r, const SyntheticDatasetOptions& o, const std::array<int64_t, 3>& shape,
                                const double (&bc)[3], const double (&br)[3]) {
  std::vector<Shape> objs;
  for (int l = 1; l <= o.num_labels; ++l) {
    const int count = 1 + static_cast<int>(r.integer(0, 1));
    for (int k = 0; k < count; ++k) {
      Shape s{l, r.uniform() < 0.3, {}, {}};
      for (int a = 0; a < 3; ++a) {
        s.rad[a] = std::max(2.0, shape[a] * r.uniform(0.08, 0.16));
        s.c[a] = bc[a] + br[a] * 0.5 * r.uniform(-1.0, 1.0);
      }
      objs.push_back(s);
    }
  }
  return objs;
}

// The label at voxel centre `p`: that of the last object holding it (later objects win), 0 outside all.
int label_at(const std::vector<Shape>& objs, const double (&p)[3]) {
  int lab = 0;
  for (const auto& s : objs) {
    bool in;
    if (s.box) {
      in = true;
      for (int a = 0; a < 3; ++a) in = in && std::abs(p[a] - s.c[a]) <= s.rad[a];
    } else {
      double e = 0;
      for (int a = 0; a < 3; ++a) e += std::pow((p[a] - s.c[a]) / s.rad[a], 2);
      in = e <= 1.0;
    }
    if (in) lab = s.label;
  }
  return lab;
}

struct CaseVolumes {
  std::vector<double> label;
  std::vector<std::vector<double>> chans;
};

// The label map and the channels: inside the body each channel's intensity follows the label, plus noise.
CaseVolumes paint_case(Rng& r, const SyntheticDatasetOptions& o, const std::array<int64_t, 3>& shape,
                       const double (&bc)[3], const double (&br)[3], const std::vector<Shape>& objs) {
  const int64_t n = shape[0] * shape[1] * shape[2];
  CaseVolumes v{std::vector<double>(static_cast<size_t>(n), 0.0),
                std::vector<std::vector<double>>(o.num_channels, std::vector<double>(static_cast<size_t>(n), 0.0))};
  std::vector<double> chan_base(o.num_channels), chan_step(o.num_channels);
  for (int c = 0; c < o.num_channels; ++c) {
    chan_base[c] = r.uniform(0.8, 1.2) * (c + 1);
    chan_step[c] = (c % 2 == 0 ? 1.0 : -0.6) * r.uniform(0.9, 1.1);
  }
  int64_t i = 0;
  for (int64_t z = 0; z < shape[0]; ++z)
    for (int64_t y = 0; y < shape[1]; ++y)
      for (int64_t x = 0; x < shape[2]; ++x, ++i) {
        const double p[3] = {z + 0.5, y + 0.5, x + 0.5};
        double d = 0;
        for (int a = 0; a < 3; ++a) d += std::pow((p[a] - bc[a]) / br[a], 2);
        if (d > 1.0) continue;  // outside the body: exactly zero in every channel
        const int lab = label_at(objs, p);
        v.label[static_cast<size_t>(i)] = lab;
        for (int c = 0; c < o.num_channels; ++c)
          v.chans[c][static_cast<size_t>(i)] = chan_base[c] + chan_step[c] * lab + o.noise_std * r.normal() + 1e-3;
      }
  return v;
}

void write_case(const std::string& img_dir, const std::string& lbl_dir, const std::string& id,
                const SyntheticDatasetOptions& o, uint64_t seed, bool partially_annotated) {
  Rng r(seed);
  std::array<int64_t, 3> shape{};
  const Geometry g = case_geometry(r, o, shape);
  // Body: an ellipsoid covering most of the volume; zero outside (air), so cropping matters.
  const double bc[3] = {shape[0] / 2.0, shape[1] / 2.0, shape[2] / 2.0};
  const double br[3] = {shape[0] * 0.45, shape[1] * r.uniform(0.36, 0.45), shape[2] * r.uniform(0.36, 0.45)};
  const std::vector<Shape> objs = case_objects(r, o, shape, bc, br);
  CaseVolumes v = paint_case(r, o, shape, bc, br, objs);
  if (partially_annotated) {
    const int64_t n = shape[0] * shape[1] * shape[2], from_x = shape[2] - shape[2] / 3;
    for (int64_t k = 0; k < n; ++k)
      if (k % shape[2] >= from_x) v.label[static_cast<size_t>(k)] = o.num_labels + 1;
  }
  // PNG and BMP hold 8-bit integers: the same intensities, scaled into 0..255 (contrast as before).
  const bool natural = image_family("x" + o.file_ending) == ImageFamily::Natural2D;
  if (natural)
    for (auto& ch : v.chans)
      for (double& x : ch) x = std::clamp(std::round(40 * x + 60), 0.0, 255.0);
  char buf[16];
  for (int c = 0; c < o.num_channels; ++c) {
    std::snprintf(buf, sizeof buf, "_%04d", c);
    write_image(img_dir + "/" + id + buf + o.file_ending,
                Volume::from_values(natural ? PixelType::UInt8 : PixelType::Float32, shape, g, v.chans[c]));
  }
  if (!lbl_dir.empty())
    write_image(lbl_dir + "/" + id + o.file_ending, Volume::from_values(PixelType::UInt8, shape, g, v.label));
}

void check_synthetic_options(const SyntheticDatasetOptions& o) {
  MEDSEG_CHECK(o.dataset_id >= 0 && o.dataset_id <= 999, "dataset id must be in 0..999");
  MEDSEG_CHECK(o.num_cases >= 1 && o.num_channels >= 1 && o.num_labels >= 1,
               "need at least one case, channel and label");
  // One label is no region.
  MEDSEG_CHECK(!o.regions || o.num_labels >= 2, "--regions needs at least 2 labels");
  for (int a = o.two_d ? 1 : 0; a < 3; ++a)
    MEDSEG_CHECK(o.min_shape[a] >= 8 && o.max_shape[a] >= o.min_shape[a],
                 "invalid shape range (each axis >= 8, max >= min)");
}

// dataset.json, with keys in the order nnU-Net's examples list them; labels in value order ("region10" after
// "region9").
ordered_json synthetic_dataset_json(const SyntheticDatasetOptions& o) {
  ordered_json ds;
  for (int c = 0; c < o.num_channels; ++c) ds["channel_names"][std::to_string(c)] = channel_name(o, c);
  ordered_json labels = ordered_json::object();
  labels["background"] = 0;
  if (o.regions) {
    ordered_json order = ordered_json::array();
    for (int l = 1; l <= o.num_labels; ++l) {
      ordered_json values = ordered_json::array();
      for (int v = l; v <= o.num_labels; ++v) values.push_back(v);
      labels["region" + std::to_string(l)] = values;
      order.push_back(l);
    }
    ds["regions_class_order"] = order;
  } else {
    for (int l = 1; l <= o.num_labels; ++l) labels["class" + std::to_string(l)] = l;
  }
  if (o.ignore_label) labels["ignore"] = o.num_labels + 1;
  ds["labels"] = labels;
  ds["numTraining"] = o.num_cases;
  ds["file_ending"] = o.file_ending;
  ds["name"] = o.name;
  ds["description"] = "Synthetic dataset written by medseg_make_dataset (seed " + std::to_string(o.seed) + ")";
  return ds;
}

}  // namespace

std::string write_synthetic_dataset(const std::string& root, const SyntheticDatasetOptions& o, bool overwrite,
                                    int threads) {
  check_synthetic_options(o);
  char name[32];
  std::snprintf(name, sizeof name, "Dataset%03d_", o.dataset_id);
  check_path_component(o.name, "dataset name (--name)");
  check_path_component(o.file_ending, "file ending (--file-ending)");
  const fs::path target = fs::path(root) / (name + o.name);
  MEDSEG_CHECK_FILE(!fs::exists(target) || overwrite, target.string(),
                    "already exists (use --overwrite to replace it)");
  refuse_taken_dataset_id(root, target.filename().string(), "choose another -d, or remove it");
  // Built aside and moved into place at the end: a failed make leaves no partial dataset, and
  // --overwrite keeps the old one until the new one is complete.
  StagedFolder staged(target.string());
  const fs::path folder = staged.path();
  for (const char* sub : {"imagesTr", "labelsTr"}) fs::create_directories(folder / sub);
  if (o.num_test_cases > 0)
    for (const char* sub : {"imagesTs", "labelsTs"}) fs::create_directories(folder / sub);

  const int total = o.num_cases + o.num_test_cases;
  parallel_for(total, threads, [&](int64_t k) {
    const bool test = k >= o.num_cases;
    char id[32];
    std::snprintf(id, sizeof id, "%s_%03d", test ? "test" : "case", static_cast<int>(test ? k - o.num_cases : k));
    write_case((folder / (test ? "imagesTs" : "imagesTr")).string(),
               (folder / (test ? "labelsTs" : "labelsTr")).string(), id, o,
               o.seed * 1000003ULL + static_cast<uint64_t>(k), o.ignore_label && !test);
  });

  const ordered_json ds = synthetic_dataset_json(o);
  write_ordered_json((folder / "dataset.json").string(), ds);
  staged.commit();
  return target.string();
}

}  // namespace medseg::io
