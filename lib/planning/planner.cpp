#include "planning/planner.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/numeric.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "plans/normalization_names.h"
#include "planning/planner_internal.h"
#include "planning/spatial_parallel.h"

namespace medseg::planning {

namespace detail {

double prod(const std::vector<double>& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}

double prod(const std::vector<int64_t>& v) {
  double p = 1;
  for (auto x : v) p *= static_cast<double>(x);
  return p;
}

MemoryOptions Ctx::memory_options() const {
  MemoryOptions m;
  m.amp = opt.amp;
  m.optimizer = opt.optimizer == "adamw" ? OptimizerKind::AdamW : OptimizerKind::SgdMomentum;
  m.spatial_parallel = opt.spatial_parallel;
  return m;
}

double Ctx::budget_bytes() const { return target_gb * 1073741824.0 * (1.0 - opt.memory_headroom); }

std::vector<double> initial_patch(const std::vector<double>& spacing, const std::vector<double>& median) {
  std::vector<double> tmp;
  for (double s : spacing) tmp.push_back(1.0 / s);
  const double f =
      spacing.size() == 3 ? std::pow(16777216.0 / prod(tmp), 1.0 / 3.0) : std::pow(4194304.0 / prod(tmp), 0.5);
  std::vector<double> out;
  for (std::size_t i = 0; i < tmp.size(); ++i) out.push_back(std::min(round_half_even(tmp[i] * f), median[i]));
  return out;
}

std::size_t axis_to_shrink(const std::vector<int64_t>& patch, const std::vector<double>& median,
                           const std::vector<bool>& allowed) {
  std::size_t axis = 0;
  double best = -1;
  for (std::size_t i = 0; i < patch.size(); ++i) {
    if (!allowed.empty() && !allowed[i]) continue;
    const double r = static_cast<double>(patch[i]) / median[i];
    if (r >= best) best = r, axis = i;
  }
  return axis;
}

// The kwargs nnU-Net's planners write: resample_data_or_seg_to_shape's (ExperimentPlanner.determine_resampling),
// or those of the *_torchres planners for resample_torch_fornnunet, in their key order.
ordered_json resampling_kwargs(const ResamplingPreset& r, bool is_seg, int order) {
  const ordered_json force = r.force_separate_z ? ordered_json(*r.force_separate_z) : ordered_json(nullptr);
  ordered_json k;
  k["is_seg"] = is_seg;
  if (!r.torch) k["order"] = order, k["order_z"] = 0;
  k["force_separate_z"] = force;
  if (r.torch) k["memefficient_seg_resampling"] = false;
  if (const auto t = r.separate_z_anisotropy_threshold)  // nnU-Net writes its ANISO_THRESHOLD, 3, as an integer
    k["separate_z_anisotropy_threshold"] =
        *t == std::floor(*t) ? ordered_json(static_cast<int64_t>(*t)) : ordered_json(*t);
  return k;
}

ordered_json configuration_json(const Ctx& c, const std::string& data_identifier, int64_t batch_size,
                                const std::vector<int64_t>& patch, const std::vector<double>& median,
                                bool median_is_int, const std::vector<double>& spacing) {
  std::vector<std::string> schemes;
  std::vector<bool> mask;
  for (const auto& n : c.ds.channel_names) {
    const NormalizationScheme scheme = normalization_for_channel(n);
    schemes.push_back(normalization_class_name(scheme));
    mask.push_back(c.fp.median_relative_size_after_cropping < 0.75 && scheme == NormalizationScheme::ZScore);
  }
  ordered_json p;
  p["data_identifier"] = data_identifier;
  p["preprocessor_name"] = c.opt.preprocessor_name;
  p["batch_size"] = batch_size;
  p["patch_size"] = patch;
  if (median_is_int) {
    std::vector<int64_t> m;
    for (double v : median) m.push_back(static_cast<int64_t>(v));
    p["median_image_size_in_voxels"] = m;
  } else {
    p["median_image_size_in_voxels"] = median;
  }
  p["spacing"] = spacing;
  p["normalization_schemes"] = schemes;
  p["use_mask_for_norm"] = mask;
  const ResamplingPreset& r = c.spec.resampling;
  const char* fn = r.torch ? "resample_torch_fornnunet" : "resample_data_or_seg_to_shape";
  p["resampling_fn_data"] = fn;
  p["resampling_fn_seg"] = fn;
  p["resampling_fn_data_kwargs"] = resampling_kwargs(r, false, 3);
  p["resampling_fn_seg_kwargs"] = resampling_kwargs(r, true, 1);
  p["resampling_fn_probabilities"] = fn;
  p["resampling_fn_probabilities_kwargs"] = resampling_kwargs(r, false, 1);
  return p;
}

int64_t cap_batch_size(const Ctx& c, int64_t bs, const std::vector<int64_t>& patch, double approx_n_voxels) {
  const int64_t cap = round_half_even_int(approx_n_voxels * c.spec.max_dataset_covered / prod(patch));
  return std::max<int64_t>(std::min(bs, cap), c.spec.min_batch);
}

void annotate_memory(const Ctx& c, ordered_json& plan, const std::string& model) {
  const ConfigurationPlan cp = configuration_from_json(json::parse(plan.dump()), "planned", "planner");
  const MemoryEstimate e = estimate_training_memory(cp.architecture, cp.patch_size, cp.batch_size, c.in_channels(),
                                                    c.ds.num_labels, c.memory_options());
  ordered_json m;
  m["memory_model"] = model;
  m["gpu_memory_target_gb"] = c.target_gb;
  m["memory_headroom"] = c.opt.memory_headroom;
  m["estimated_peak_bytes"] = e.peak_bytes;
  if (c.opt.spatial_parallel > 1) {
    const int axis = spatial_shard_axis(cp.patch_size, cp.architecture.strides, c.opt.spatial_parallel);
    m["spatial_parallel"] = {{"ranks", c.opt.spatial_parallel},
                             {"axis", axis},
                             {"slab_patch_size", slab_patch(cp.patch_size, axis, c.opt.spatial_parallel)}};
  }
  m["memory"] = ordered_json::parse(e.to_json().dump());
  plan["medseg"] = m;
}

}  // namespace detail

using namespace detail;

namespace {

// numpy.percentile(..., method='linear'): the virtual index is (n-1) * (q/100), in that order,
// which matters in the last bit for q = 10.
double np_percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double idx = static_cast<double>(v.size() - 1) * (q / 100.0);
  const double lo_f = std::floor(idx);
  const auto lo = static_cast<std::size_t>(lo_f);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  const double t = idx - lo_f, a = v[lo], b = v[hi], d = b - a;
  return t >= 0.5 ? b - d * (1.0 - t) : a + d * t;
}

std::vector<double> column(const std::vector<std::vector<double>>& rows, std::size_t axis) {
  std::vector<double> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r[axis]);
  return out;
}

template <class T>
std::vector<T> permute(const std::vector<T>& v, const std::vector<int>& order) {
  std::vector<T> out;
  for (int i : order) out.push_back(v[static_cast<std::size_t>(i)]);
  return out;
}

std::string data_identifier(const Ctx& c, const std::string& config) {
  // The ResEnc presets share nnUNetPlans' preprocessed 2d/3d_fullres data (same spacing and
  // normalization), as nnU-Net's; not when the target spacing is overwritten, which would make
  // preprocessing rewrite nnUNetPlans' data at another spacing.
  const bool share = c.spec.shares_default_data_identifiers && c.opt.overwrite_target_spacing.empty();
  if (share && (config == "2d" || config == "3d_fullres")) return "nnUNetPlans_" + config;
  return c.plans_name + "_" + config;
}

ConfigOut plan_config(Ctx& c, const std::vector<double>& spacing, const std::vector<double>& median, bool median_is_int,
                      const std::string& id, double approx) {
  if (c.spec.network == NetworkKind::SwinUNETR) return plan_swin_configuration(c, spacing, median, id, approx);
  return plan_unet_configuration(c, spacing, median, median_is_int, id, approx);
}

}  // namespace

std::string normalization_scheme_for(const std::string& channel_name) {
  return normalization_class_name(normalization_for_channel(channel_name));
}

namespace {

std::string lower_case_ending(const std::string& file_ending) {
  std::string e;
  for (unsigned char ch : file_ending) e += static_cast<char>(std::tolower(ch));
  return e;
}

// nnU-Net's reader/writer for a lower-case file ending; empty when none reads it.
std::string default_reader_writer(const std::string& e, bool is_3d) {
  if (e == ".png" || e == ".bmp") return "NaturalImage2DIO";
  // nnU-Net tries NaturalImage2DIO first and falls back to Tiff3DIO when the file is 3D.
  if (e == ".tif") return is_3d ? "Tiff3DIO" : "NaturalImage2DIO";
  if (e == ".tiff") return "Tiff3DIO";
  if (e == ".nii.gz" || e == ".nrrd" || e == ".mha" || e == ".gipl") return "SimpleITKIO";
  if (e == ".nii") return "NibabelIO";
  return "";
}

}  // namespace

std::string reader_writer_for(const DatasetJsonInput& ds, bool is_3d) {
  const std::string e = lower_case_ending(ds.file_ending);
  // NibabelIOWithReorient: io::load_case brings every volume to canonical orientation (io/reorient.h).
  MEDSEG_CHECK_FILE(ds.overwrite_image_reader_writer != "NibabelIOWithReorient" || e == ".nii" || e == ".nii.gz",
                    ds.source,
                    "overwrite_image_reader_writer 'NibabelIOWithReorient' reads .nii and .nii.gz only, not "
                    "file_ending '",
                    ds.file_ending, "'");
  if (!ds.overwrite_image_reader_writer.empty()) return ds.overwrite_image_reader_writer;
  const std::string rw = default_reader_writer(e, is_3d);
  MEDSEG_CHECK_FILE(!rw.empty(), ds.source, "no image reader/writer supports file_ending '", ds.file_ending, "'");
  return rw;
}

std::vector<double> fullres_target_spacing(const FingerprintInput& fp, double anisotropy_threshold,
                                           const std::vector<double>& overwrite) {
  if (!overwrite.empty()) {
    MEDSEG_CHECK(overwrite.size() == 3, "overwrite_target_spacing needs 3 values");
    for (double v : overwrite)
      MEDSEG_CHECK(v > 0 && std::isfinite(v), "overwrite_target_spacing values must be positive");
    return overwrite;
  }
  std::vector<double> target, size;
  for (std::size_t a = 0; a < 3; ++a) {
    target.push_back(np_percentile(column(fp.spacings, a), 50));
    size.push_back(np_percentile(column(fp.shapes_after_crop, a), 50));
  }
  const auto worst = static_cast<std::size_t>(std::max_element(target.begin(), target.end()) - target.begin());
  double max_other_sp = 0, min_other_size = INFINITY;
  for (std::size_t a = 0; a < 3; ++a) {
    if (a == worst) continue;
    max_other_sp = std::max(max_other_sp, target[a]);
    min_other_size = std::min(min_other_size, size[a]);
  }
  const bool aniso_spacing = target[worst] > anisotropy_threshold * max_other_sp;
  const bool aniso_voxels = size[worst] * anisotropy_threshold < min_other_size;
  if (aniso_spacing && aniso_voxels) {
    // Low-resolution axis: the 10th percentile avoids interpolation artefacts from coarse cases,
    // but never finer than the other axes.
    double v = np_percentile(column(fp.spacings, worst), 10);
    if (v < max_other_sp) v = std::max(max_other_sp, v) + 1e-5;
    target[worst] = v;
  }
  return target;
}

std::vector<int> transpose_forward_for(const std::vector<double>& target_spacing) {
  const int worst =
      static_cast<int>(std::max_element(target_spacing.begin(), target_spacing.end()) - target_spacing.begin());
  std::vector<int> tf{worst};
  for (int a = 0; a < static_cast<int>(target_spacing.size()); ++a)
    if (a != worst) tf.push_back(a);
  return tf;
}

namespace {

// Spacing, transpose and resampled median shape shared by all configurations.
struct DatasetGeometry {
  std::vector<double> spacing_t;  // fullres target spacing, transposed
  std::vector<double> median_t;   // median shape after resampling, transposed
  std::vector<int> tf, tb;
  double approx_n_voxels = 0;  // prod(median) * numTraining
};

DatasetGeometry dataset_geometry(const Ctx& c) {
  const FingerprintInput& fp = c.fp;
  DatasetGeometry g;
  const std::vector<double> sp =
      fullres_target_spacing(fp, c.spec.anisotropy_threshold, c.opt.overwrite_target_spacing);
  g.tf = transpose_forward_for(sp);
  g.tb.resize(3);
  for (int i = 0; i < 3; ++i) g.tb[static_cast<std::size_t>(g.tf[static_cast<std::size_t>(i)])] = i;
  g.spacing_t = permute(sp, g.tf);
  std::vector<std::vector<double>> new_shapes;
  for (std::size_t i = 0; i < fp.spacings.size(); ++i) {
    std::vector<double> s;
    for (std::size_t a = 0; a < 3; ++a)
      s.push_back(round_half_even(fp.spacings[i][a] / sp[a] * fp.shapes_after_crop[i][a]));
    new_shapes.push_back(s);
  }
  std::vector<double> med;
  for (std::size_t a = 0; a < 3; ++a) med.push_back(median(column(new_shapes, a)));
  g.median_t = permute(med, g.tf);
  g.approx_n_voxels = prod(g.median_t) * static_cast<double>(c.ds.num_training);
  return g;
}

// 3d_lowres: coarsen the spacing in steps of the preset's lowres.spacing_step (nnU-Net: 1.03; anisotropic
// axes first) until the patch covers lowres.creation_threshold (a quarter) of the median image; dropped
// when the image shrank by less than half.
std::optional<ConfigOut> plan_lowres(Ctx& c, const DatasetGeometry& g, const ConfigOut& fullres) {
  std::optional<ConfigOut> lowres;
  double median_vox = prod(g.median_t), patch_vox = prod(fullres.patch);
  std::vector<double> sp = g.spacing_t;
  for (int guard = 0; patch_vox / median_vox < c.spec.unet.lowres_creation_threshold; ++guard) {
    MEDSEG_CHECK(guard <= 10000, "planner: 3d_lowres search did not converge");
    const double max_sp = *std::max_element(sp.begin(), sp.end());
    bool any = false;
    for (double s : sp) any = any || max_sp / s > 2;
    for (double& s : sp)
      if (!any || max_sp / s > 2) s *= c.spec.unet.lowres_spacing_step;
    std::vector<double> ratio, low_median;
    for (std::size_t a = 0; a < 3; ++a) {
      ratio.push_back(g.spacing_t[a] / sp[a] * g.median_t[a]);
      low_median.push_back(round_half_even(ratio.back()));
    }
    median_vox = prod(ratio);
    lowres = plan_config(c, sp, low_median, true, data_identifier(c, "3d_lowres"),
                         median_vox * static_cast<double>(c.ds.num_training));
    patch_vox = prod(lowres->patch);
  }
  if (prod(g.median_t) / median_vox < 2) lowres.reset();
  return lowres;
}

// The inputs' and options' checks, in the order a user meets them.
void check_plan_inputs(const Ctx& c) {
  const PlannerOptions& opt = c.opt;
  const std::size_t n_channels = c.fp.foreground_intensity_properties_per_channel.size();
  MEDSEG_CHECK_FILE(n_channels == 0 || n_channels == c.ds.channel_names.size(), c.fp.source,
                    "foreground_intensity_properties_per_channel has ", n_channels, " channels but ", c.ds.source,
                    " names ", c.ds.channel_names.size());
  MEDSEG_CHECK(c.target_gb > 0, "gpu_memory_target must be > 0");
  MEDSEG_CHECK(opt.spatial_parallel >= 1 && opt.spatial_parallel <= 1024, "spatial_parallel must be in 1..1024");
  MEDSEG_CHECK(opt.spatial_parallel <= 1 || c.spec.network != NetworkKind::SwinUNETR,
               "spatial parallelism covers U-Nets only; SwinUNETR would need shifted windows across slab borders "
               "(docs/spatial_parallel.md)");
  MEDSEG_CHECK(opt.spatial_parallel <= 1 || opt.memory_model == MemoryModelKind::Bytes,
               "planning for spatial parallelism needs the bytes memory model (--memory-model bytes)");
  check_path_component(c.plans_name, "plans name");  // the plans file and the data identifiers
  if (!opt.dataset_name.empty())
    check_path_component(opt.dataset_name, "dataset name");  // library callers may leave it empty
}

// The configurations in nnU-Net's order (2d, 3d_lowres, 3d_fullres, 3d_cascade_fullres), each with its memory
// estimate when asked for.
ordered_json plan_configurations(Ctx& c, const DatasetGeometry& g, bool is_3d) {
  const PlannerSpec& spec = c.spec;
  std::optional<ConfigOut> fullres, lowres;
  if (is_3d) {
    fullres = plan_config(c, g.spacing_t, g.median_t, false, data_identifier(c, "3d_fullres"), g.approx_n_voxels);
    if (spec.network != NetworkKind::SwinUNETR) lowres = plan_lowres(c, g, *fullres);  // no cascade for Swin
    if (lowres) lowres->plan["batch_dice"] = false;
    fullres->plan["batch_dice"] = lowres.has_value();
  }
  ConfigOut plan2d = plan_config(c, {g.spacing_t[1], g.spacing_t[2]}, {g.median_t[1], g.median_t[2]}, false,
                                 data_identifier(c, "2d"), g.approx_n_voxels);
  plan2d.plan["batch_dice"] = true;

  ordered_json configs;
  configs["2d"] = plan2d.plan;
  if (lowres) {
    configs["3d_lowres"] = lowres->plan;
    configs["3d_lowres"]["next_stage"] = "3d_cascade_fullres";
  }
  if (fullres) configs["3d_fullres"] = fullres->plan;
  if (lowres)
    configs["3d_cascade_fullres"] = ordered_json{{"inherits_from", "3d_fullres"}, {"previous_stage", "3d_lowres"}};
  if (c.opt.annotate_memory) {
    const std::string model =
        spec.network == NetworkKind::SwinUNETR || c.opt.memory_model == MemoryModelKind::Bytes ? "bytes" : "proxy";
    for (auto& [name, cfg] : configs.items())
      if (cfg.contains("architecture")) annotate_memory(c, cfg, model);
  }
  return configs;
}

}  // namespace

ordered_json plan_experiment(const FingerprintInput& fp, const DatasetJsonInput& ds, const PlannerOptions& opt) {
  const PlannerSpec spec = find_planner_preset(opt.planner, opt.presets_dir);
  Ctx c{spec,
        fp,
        ds,
        opt,
        opt.gpu_memory_target_gb.value_or(spec.default_target_gb),
        opt.plans_name.empty() ? spec.default_plans_name : opt.plans_name,
        {}};
  check_plan_inputs(c);
  const DatasetGeometry g = dataset_geometry(c);
  const bool is_3d = g.median_t[0] != 1;
  const ordered_json configs = plan_configurations(c, g, is_3d);

  std::vector<double> med_sp, med_shape;
  for (std::size_t a = 0; a < 3; ++a) {
    med_sp.push_back(median(column(fp.spacings, a)));
    med_shape.push_back(median(column(fp.shapes_after_crop, a)));
  }
  std::vector<int64_t> med_shape_int;
  for (double v : permute(med_shape, g.tf)) med_shape_int.push_back(round_half_even_int(v));

  ordered_json plans;  // nnU-Net's key order
  plans["dataset_name"] = opt.dataset_name;
  plans["plans_name"] = c.plans_name;
  plans["original_median_spacing_after_transp"] = permute(med_sp, g.tf);
  plans["original_median_shape_after_transp"] = med_shape_int;
  plans["image_reader_writer"] = reader_writer_for(ds, is_3d);
  plans["transpose_forward"] = g.tf;
  plans["transpose_backward"] = g.tb;
  plans["configurations"] = configs;
  plans["experiment_planner_used"] = spec.experiment_planner_used;
  plans["label_manager"] = "LabelManager";
  plans["foreground_intensity_properties_per_channel"] =
      ordered_json::parse(fp.foreground_intensity_properties_per_channel.dump());
  return plans;
}

}  // namespace medseg::planning
