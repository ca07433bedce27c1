#include "preprocessing/preprocessor.h"

#include <chrono>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/json_io.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "fingerprint/crop.h"
#include "io/label_check.h"
#include "preprocessing/data_record.h"
#include "core/atomic_writer.h"
#include "core/output_folder.h"

namespace fs = std::filesystem;

namespace medseg::preprocessing {

namespace {

// Transposed copy of a volume, any pixel type. The geometry is index space (spacing permuted).
Volume transpose_volume(const Volume& v, const Perm3& p) {
  Geometry g;
  const std::array<double, 3> sp = permute3(v.geometry().spacing_zyx(), p);
  g.spacing = {sp[2], sp[1], sp[0]};
  Volume out(v.pixel_type(), permute3(v.shape(), p), g);
  visit_pixels(v, [&](const auto* src) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(src)>>;
    transpose_array(src, v.shape(), p, out.template data<T>());
  });
  return out;
}

std::vector<int16_t> to_int16(const Volume& v, const std::string& what) {
  std::vector<int16_t> out(static_cast<std::size_t>(v.numel()));
  visit_pixels(v, [&](const auto* p) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double x = static_cast<double>(p[i]);
      MEDSEG_CHECK(x >= std::numeric_limits<int16_t>::min() && x <= std::numeric_limits<int16_t>::max(), what,
                   ": label value ", std::to_string(x), " does not fit int16");
      out[i] = static_cast<int16_t>(x);
    }
  });
  return out;
}

Spacing3 target_spacing(const std::vector<double>& config_spacing, const Spacing3& current) {
  if (config_spacing.size() == 2) return {current[0], config_spacing[0], config_spacing[1]};
  return {config_spacing[0], config_spacing[1], config_spacing[2]};
}

}  // namespace

ResampleSpec resample_spec(const std::string& fn, const planning::ResamplingKwargs& k, const std::string& source) {
  ResampleSpec s;
  s.force_separate_z = k.force_separate_z;
  s.anisotropy_threshold = k.separate_z_anisotropy_threshold;
  if (fn == "resample_torch_fornnunet") {
    MEDSEG_CHECK(k.mode == "linear" && k.aniso_axis_mode == "nearest-exact", source,
                 ": resample_torch_fornnunet with mode '", k.mode, "' and aniso_axis_mode '", k.aniso_axis_mode,
                 "' is not supported (medseg implements nnU-Net's 'linear' and 'nearest-exact')");
    s.kernel = ResampleKernel::Torch;
    s.memefficient_seg = k.memefficient_seg_resampling;
    return s;
  }
  MEDSEG_CHECK(fn == "resample_data_or_seg_to_shape" || fn == "resample_data_or_seg_to_spacing", source,
               ": resampling function '", fn,
               "' is not supported (medseg implements resample_data_or_seg_to_shape and resample_torch_fornnunet)");
  MEDSEG_CHECK(k.order >= 0 && k.order <= 5 && k.order_z >= 0 && k.order_z <= 5, source,
               ": resampling orders must be in 0..5");
  s.orders = {k.order, k.order_z};
  return s;
}

PreprocessPlan make_preprocess_plan(const planning::Plans& plans, const std::string& configuration,
                                    const io::DatasetInfo& dataset) {
  const std::string src = plans.source.empty() ? plans.plans_name : plans.source;
  const planning::ConfigurationPlan& c = plans.configuration(configuration);
  PreprocessPlan p;
  p.plans_name = plans.plans_name;
  p.configuration = configuration;
  p.data_identifier = c.data_identifier;
  MEDSEG_CHECK(!p.data_identifier.empty(), src, ": configuration '", configuration, "' has no data_identifier");
  p.transpose_forward = to_perm3(plans.transpose_forward, src);
  p.spacing = c.spacing;
  MEDSEG_CHECK(p.spacing.size() == 2 || p.spacing.size() == 3, src, ": configuration '", configuration,
               "' spacing must have 2 or 3 values");
  const int nch = dataset.num_channels();
  MEDSEG_CHECK(
      static_cast<int>(c.normalization_schemes.size()) == nch && static_cast<int>(c.use_mask_for_norm.size()) == nch,
      src, ": configuration '", configuration, "' has ", c.normalization_schemes.size(),
      " normalization scheme(s) but ", dataset.folder, "/dataset.json names ", nch, " channel(s)");
  for (int ch = 0; ch < nch; ++ch) {
    NormScheme s;
    try {
      s = parse_norm_scheme(c.normalization_schemes[ch]);
    } catch (const Error& e) { throw Error(concat(src, ": ", e.what())); }
    p.schemes.push_back(s);
    p.use_mask.push_back(c.use_mask_for_norm[ch]);
    if (s == NormScheme::CT)
      p.intensity.push_back(intensity_props_from_json(plans.foreground_intensity_properties_per_channel, ch, src));
    else
      p.intensity.push_back(std::nullopt);
  }
  p.data = resample_spec(c.resampling_fn_data, c.resampling_fn_data_kwargs, src);
  p.seg = resample_spec(c.resampling_fn_seg, c.resampling_fn_seg_kwargs, src);
  p.classes = sampling_classes(dataset);
  p.label_values = dataset.label_values();
  p.reorient_to_ras = plans.image_reader_writer == io::kReorientingReader;
  return p;
}

PreprocessedCaseData preprocess_case(io::LoadedCase loaded, const PreprocessPlan& plan) {
  PreprocessedCaseData out;
  CaseProperties& props = out.properties;
  props.id = loaded.id;
  props.original_shape = loaded.shape();
  props.original_geometry = loaded.geometry();
  props.reorientation = loaded.reorientation;
  props.file_geometry = loaded.file_geometry;
  props.original_spacing = props.original_geometry.spacing_zyx();
  props.transpose_forward = plan.transpose_forward;
  props.has_label = loaded.label.numel() > 0;
  const Perm3& tf = plan.transpose_forward;

  // 1. transpose (skipped for the identity, the usual case)
  std::vector<Volume> channels;
  Volume label;
  if (tf == Perm3{0, 1, 2}) {
    channels = std::move(loaded.channels);
    label = std::move(loaded.label);
  } else {
    for (const Volume& v : loaded.channels) channels.push_back(transpose_volume(v, tf));
    if (props.has_label) label = transpose_volume(loaded.label, tf);
    loaded = {};
  }
  props.shape_before_cropping = channels.at(0).shape();
  props.spacing_before_resampling = permute3(props.original_spacing, tf);

  // 2. crop to nonzero
  fingerprint::CropResult crop = fingerprint::crop_to_nonzero(channels, props.has_label ? &label : nullptr);
  channels.clear();
  label = Volume();
  props.bbox_used_for_cropping = crop.bbox;
  const Shape3 cropped = crop.shape_after();
  props.shape_after_cropping_and_before_resampling = cropped;
  const int64_t n = cropped[0] * cropped[1] * cropped[2];
  const int nch = static_cast<int>(crop.channels.size());
  MEDSEG_CHECK(nch == static_cast<int>(plan.schemes.size()), "case '", props.id, "' has ", nch,
               " channel(s), the plans expect ", plan.schemes.size());
  std::vector<int16_t> seg = to_int16(crop.seg, concat("case '", props.id, "'"));
  std::vector<float> data(static_cast<std::size_t>(nch * n));
  for (int c = 0; c < nch; ++c) {
    const float* src = crop.channels[c].data<float>();
    std::copy(src, src + n, data.begin() + c * n);
  }
  crop = {};

  // 3. normalize (before resampling, so the mask still fits the image exactly)
  const ChannelLayout layout{cropped, props.shape_before_cropping, tf};
  for (int c = 0; c < nch; ++c) {
    const IntensityProps* ip = plan.intensity[c] ? &*plan.intensity[c] : nullptr;
    normalize_channel(data.data() + c * n, n, plan.schemes[c], plan.use_mask[c], seg.data(), ip, &layout);
  }

  // 4. resample
  const Spacing3 target = target_spacing(plan.spacing, props.spacing_before_resampling);
  props.spacing_after_resampling = target;
  const Shape3 new_shape = compute_new_shape(cropped, props.spacing_before_resampling, target);
  props.shape_after_resampling = new_shape;
  const SeparateZ sep_data = decide_separate_z(plan.data, props.spacing_before_resampling, target);
  const SeparateZ sep_seg = decide_separate_z(plan.seg, props.spacing_before_resampling, target);
  out.arrays.channels = nch;
  out.arrays.shape = new_shape;
  out.arrays.data = resample_data_with(plan.data, data, nch, cropped, new_shape, sep_data);
  data = {};
  out.arrays.seg = resample_seg_with(plan.seg, seg, cropped, new_shape, sep_seg);

  // 5. class locations
  if (props.has_label) props.class_locations = sample_class_locations(out.arrays.seg.data(), new_shape, plan.classes);
  return out;
}

void preprocess_cases(const std::vector<io::CaseFiles>& cases, const PreprocessPlan& plan,
                      const std::string& output_folder, const PreprocessOptions& options) {
  // Another plans' data under the same data_identifier is never rewritten at another spacing or
  // normalization (data_record.h).
  check_data_record(output_folder, plan);
  // Built aside and swapped in when complete: a case that fails keeps the previous preprocessed
  // data intact and leaves no half-filled folder that training would take as the dataset.
  StagedFolder staged(output_folder);
  const std::string& folder = staged.path();
  ProgressBar bar("preprocess " + plan.configuration, static_cast<int64_t>(cases.size()), options.progress);
  auto one_case = [&](int64_t i) {
    const io::CaseFiles& files = cases[static_cast<std::size_t>(i)];
    try {
      io::LoadedCase loaded = io::load_case(files, plan.reorient_to_ras);
      if (loaded.label.numel() > 0 && !plan.label_values.empty())
        io::check_label_values(loaded.label, plan.label_values, files.label, files.id);
      PreprocessedCaseData r = preprocess_case(std::move(loaded), plan);
      write_preprocessed_case(folder, r.properties, r.arrays, false);
    } catch (const FileError&) { throw; } catch (const std::exception& e) {
      throw FileError(files.images.at(0), e.what());
    }
    bar.tick();
  };
  parallel_for(static_cast<int64_t>(cases.size()), options.threads, one_case);
  bar.finish();
  write_json((fs::path(folder) / kDataRecordName).string(), data_record(plan));
  sync_filesystem(folder);  // one flush instead of one fsync per file
  staged.commit();
}

void copy_gt_segmentations(const std::vector<io::CaseFiles>& cases, const std::string& file_ending,
                           const std::string& folder) {
  fs::create_directories(folder);
  for (const io::CaseFiles& c : cases) {
    if (c.label.empty()) continue;
    const fs::path dst = fs::path(folder) / (c.id + file_ending);
    std::error_code ec;
    if (fs::exists(dst) && fs::last_write_time(dst, ec) >= fs::last_write_time(c.label, ec) &&
        fs::file_size(dst) == fs::file_size(c.label))
      continue;
    write_file_atomic(dst.string(), read_file(c.label));
  }
}

int default_preprocess_threads(const std::string& configuration) {
  if (configuration == "2d" || configuration == "3d_lowres") return 8;
  return 4;
}

}  // namespace medseg::preprocessing
