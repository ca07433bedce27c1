#include "inference/export.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/json_io.h"
#include "core/numeric.h"
#include "core/parallel.h"
#include "fingerprint/crop.h"
#include "inference/model_folder.h"
#include "inference/slab_export.h"
#include "io/image_io.h"
#include "io/output_classes.h"
#include "io/reorient.h"
#include "preprocessing/npy.h"
#include "preprocessing/npz.h"
#include "preprocessing/resampling.h"
#include "preprocessing/transpose.h"

namespace medseg::inference {

float logit_as_half(double v) {
  const float h = round_to_half(v);
  return std::isinf(h) && !std::isinf(v) ? static_cast<float>(v) : h;
}

LabelMapping label_mapping(const io::DatasetInfo& dataset, const std::string& source) {
  const io::OutputClasses classes = io::output_classes(dataset, source);
  LabelMapping m;
  m.regions = classes.regions;
  m.values = classes.values;
  int max_value = 0;
  for (int v : m.values) max_value = std::max(max_value, v);
  MEDSEG_CHECK_FILE(max_value <= 65535, source, "label values above 65535 are not supported");
  m.pixel_type = max_value > 255 ? PixelType::UInt16 : PixelType::UInt8;
  return m;
}

preprocessing::ResampleSpec probabilities_resampling(const planning::ConfigurationPlan& cfg) {
  preprocessing::ResampleSpec s;
  const auto& k = cfg.resampling_fn_probabilities_kwargs;
  if (cfg.resampling_fn_probabilities.empty() && k.raw.is_null()) return s;  // a plan made in code: order 1
  const std::string fn =
      cfg.resampling_fn_probabilities.empty() ? "resample_data_or_seg_to_shape" : cfg.resampling_fn_probabilities;
  return preprocessing::resample_spec(fn, k, "configuration '" + cfg.name + "' (resampling_fn_probabilities)");
}

namespace {

int64_t numel(const Shape3& s) { return s[0] * s[1] * s[2]; }

// One class's logits resampled to the cropped original shape (or copied when the shape is kept).
// With `half`, the resampled values are rounded to fp16 (ExportOptions::half_logits).
// nnU-Net's torch resampling returns float32 whatever its input (F.interpolate(data.float())): no rounding there.
std::vector<float> resampled_channel(const float* src, const Shape3& in, const Shape3& out,
                                     const preprocessing::SeparateZ& sep, const preprocessing::ResampleSpec& spec,
                                     bool half = false) {
  std::vector<float> ch(src, src + numel(in));
  if (in == out) return ch;
  std::vector<float> r = preprocessing::resample_data_with(spec, ch, 1, in, out, sep);
  if (half && spec.kernel == preprocessing::ResampleKernel::Skimage)
    for (float& v : r) v = logit_as_half(v);
  return r;
}

// Cropped (transposed) box -> full original array: uncrop with `fill`, then transpose back.
template <class T>
void to_original(const T* cropped, const preprocessing::CaseProperties& p, T fill, T* out) {
  const Shape3 full = p.shape_before_cropping;
  std::vector<T> buf(static_cast<std::size_t>(numel(full)), fill);
  fingerprint::uncrop_array(cropped, p.bbox_used_for_cropping, full, buf.data());
  preprocessing::transpose_array(buf.data(), full, preprocessing::inverse_perm(p.transpose_forward), out);
}

}  // namespace

namespace {

// Steps 1 and 2 on the grid `out`: each class's logits resampled from `in`, then argmax (labels) or
// painted (regions). With `resampled`, also every resampled class (K x out).
std::vector<uint16_t> segment_resampled(const at::Tensor& logits_in, const Shape3& in, const Shape3& out,
                                        const preprocessing::SeparateZ& sep, const LabelMapping& labels,
                                        const ExportOptions& opts, std::vector<float>* resampled) {
  const at::Tensor logits = logits_in.contiguous();
  const int64_t K = logits.size(0);
  MEDSEG_CHECK(K == static_cast<int64_t>(labels.values.size()), "export: ", K, " logit channels for ",
               labels.values.size(), " classes");
  MEDSEG_CHECK(logits.dim() == 4 && logits.size(1) == in[0] && logits.size(2) == in[1] && logits.size(3) == in[2],
               "export: logits do not have the preprocessed shape ", shape_str(in));
  const int64_t n = numel(out), n_in = numel(in);
  const float* src = logits.data_ptr<float>();

  // Classes in groups of `threads`: each group resampled in parallel, then folded into a running
  // argmax (or painted, for regions), so at most `threads` resampled classes are alive at once
  // unless all of them are wanted.
  std::vector<float> best(static_cast<std::size_t>(n), -std::numeric_limits<float>::infinity());
  std::vector<uint16_t> seg(static_cast<std::size_t>(n), 0);
  if (resampled) resampled->assign(static_cast<std::size_t>(K * n), 0.0f);
  const int64_t group = std::max(1, opts.threads);
  for (int64_t first = 0; first < K; first += group) {
    const int64_t cnt = std::min(group, K - first);
    std::vector<std::vector<float>> res(static_cast<std::size_t>(cnt));
    parallel_for(cnt, static_cast<int>(cnt), [&](int64_t i) {
      res[static_cast<std::size_t>(i)] =
          resampled_channel(src + (first + i) * n_in, in, out, sep, opts.resample, opts.half_logits);
    });
    for (int64_t i = 0; i < cnt; ++i) {
      const int64_t k = first + i;
      const std::vector<float>& r = res[static_cast<std::size_t>(i)];
      const auto value = static_cast<uint16_t>(labels.values[static_cast<std::size_t>(k)]);
      if (labels.regions) {
        for (int64_t v = 0; v < n; ++v)
          if (r[v] > 0.0f) seg[v] = value;  // sigmoid > 0.5
      } else {
        for (int64_t v = 0; v < n; ++v)
          if (r[v] > best[v]) best[v] = r[v], seg[v] = value;  // first maximum wins, as numpy's argmax
      }
      if (resampled) std::copy(r.begin(), r.end(), resampled->begin() + k * n);
    }
  }
  return seg;
}

}  // namespace

std::vector<int16_t> logits_to_next_stage(const at::Tensor& logits, const preprocessing::CaseProperties& p,
                                          const Shape3& target, const preprocessing::Spacing3& target_spacing,
                                          const LabelMapping& labels, const ExportOptions& opts) {
  const auto sep = preprocessing::decide_separate_z(opts.resample, p.spacing_after_resampling, target_spacing);
  const std::vector<uint16_t> seg =
      segment_resampled(logits, p.shape_after_resampling, target, sep, labels, opts, nullptr);
  return std::vector<int16_t>(seg.begin(), seg.end());
}

Volume logits_to_segmentation(const at::Tensor& logits, const preprocessing::CaseProperties& p,
                              const LabelMapping& labels, const ExportOptions& opts,
                              std::vector<float>* probabilities) {
  if (SlabExport::supported(opts)) {  // one slab: the same numbers as a slab-wise prediction's
    SlabExport slabs(p, labels, opts, 0, probabilities != nullptr);
    slabs.add(0, logits.contiguous());
    return slabs.finish(probabilities);
  }
  const Shape3 in = p.shape_after_resampling, cropped = p.shape_after_cropping_and_before_resampling;
  const auto sep =
      preprocessing::decide_separate_z(opts.resample, p.spacing_after_resampling, p.spacing_before_resampling);
  std::vector<float> all;
  const std::vector<uint16_t> seg =
      segment_resampled(logits, in, cropped, sep, labels, opts, probabilities ? &all : nullptr);
  return segmentation_to_original(seg, probabilities ? &all : nullptr, p, labels, probabilities);
}

namespace {

// Logits to probabilities in place, per voxel of `n`: a softmax over the classes, or a sigmoid per region.
void logits_to_probabilities(std::vector<float>& all, int64_t K, int64_t n, bool regions) {
  if (regions) {
    for (float& x : all) x = 1.0f / (1.0f + std::exp(-x));
    return;
  }
  for (int64_t v = 0; v < n; ++v) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < K; ++k) mx = std::max(mx, all[k * n + v]);
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += std::exp(static_cast<double>(all[k * n + v] - mx));
    for (int64_t k = 0; k < K; ++k)
      all[k * n + v] = static_cast<float>(std::exp(static_cast<double>(all[k * n + v] - mx)) / sum);
  }
}

// The cropped probabilities placed in the original shape: outside the crop box the background's is 1 (labels),
// every region's 0.
void probabilities_to_original(const std::vector<float>& all, const preprocessing::CaseProperties& p,
                               const LabelMapping& labels, std::vector<float>& out) {
  const auto K = static_cast<int64_t>(labels.values.size());
  const int64_t n = numel(p.shape_after_cropping_and_before_resampling), N = numel(p.original_shape);
  out.assign(static_cast<std::size_t>(K * N), 0.0f);
  for (int64_t k = 0; k < K; ++k) {
    const float fill = (!labels.regions && k == 0) ? 1.0f : 0.0f;
    to_original(all.data() + k * n, p, fill, out.data() + k * N);
  }
}

}  // namespace

Volume segmentation_to_original(const std::vector<uint16_t>& seg, std::vector<float>* resampled,
                                const preprocessing::CaseProperties& p, const LabelMapping& labels,
                                std::vector<float>* probabilities) {
  const auto K = static_cast<int64_t>(labels.values.size());
  const int64_t n = numel(p.shape_after_cropping_and_before_resampling);
  MEDSEG_CHECK(static_cast<int64_t>(seg.size()) == n &&
                   (!probabilities || (resampled && static_cast<int64_t>(resampled->size()) == K * n)),
               "export: the segmentation does not have the cropped shape");
  const Shape3 orig = p.original_shape;
  Volume out(labels.pixel_type, orig, p.original_geometry);
  {
    std::vector<uint16_t> full(static_cast<std::size_t>(numel(orig)));
    to_original(seg.data(), p, uint16_t{0}, full.data());
    if (labels.pixel_type == PixelType::UInt8)
      std::copy(full.begin(), full.end(), out.data<uint8_t>());
    else
      std::copy(full.begin(), full.end(), out.data<uint16_t>());
  }
  if (probabilities) {
    logits_to_probabilities(*resampled, K, n, labels.regions);
    probabilities_to_original(*resampled, p, labels, *probabilities);
    std::vector<float>().swap(*resampled);
  }
  // NibabelIOWithReorient: back from the canonical orientation to the file's array and geometry.
  if (p.reorientation) {
    if (probabilities) *probabilities = io::reorient_back_channels(*probabilities, K, orig, *p.reorientation);
    out = io::reorient_back(out, *p.reorientation, p.file_geometry);
  }
  return out;
}

Volume channel_to_original(const float* channel, const preprocessing::CaseProperties& p, const ExportOptions& opts) {
  const Shape3 in = p.shape_after_resampling, cropped = p.shape_after_cropping_and_before_resampling;
  const auto sep =
      preprocessing::decide_separate_z(opts.resample, p.spacing_after_resampling, p.spacing_before_resampling);
  const std::vector<float> r = resampled_channel(channel, in, cropped, sep, opts.resample);
  const float fill = r.empty() ? 0.0f : *std::min_element(r.begin(), r.end());
  std::vector<float> full(static_cast<std::size_t>(numel(p.original_shape)));
  to_original(r.data(), p, fill, full.data());
  return Volume::from_float(p.original_shape, p.original_geometry, std::move(full));
}

void parse_probabilities_format(const std::string& value, bool* npy, bool* npz) {
  MEDSEG_CHECK(value == "medseg" || value == "nnunet" || value == "both", "--probabilities_format: '", value,
               "' is not medseg, nnunet or both");
  *npy = value != "nnunet";
  *npz = value != "medseg";
}

Volume export_prediction(const at::Tensor& logits, const preprocessing::CaseProperties& p, const LabelMapping& labels,
                         const ExportOptions& opts, const std::string& base, const std::string& file_ending) {
  std::vector<float> probs;
  Volume seg = logits_to_segmentation(logits, p, labels, opts, opts.save_probabilities ? &probs : nullptr);
  return write_prediction(std::move(seg), opts.save_probabilities ? &probs : nullptr, labels, opts, base, file_ending);
}

Volume write_prediction(Volume seg, const std::vector<float>* probs, const LabelMapping& labels,
                        const ExportOptions& opts, const std::string& base, const std::string& file_ending) {
  if (probs) {
    const auto& s = seg.shape();  // the file's array order (also after a reorientation)
    const std::vector<int64_t> shape{static_cast<int64_t>(labels.values.size()), s[0], s[1], s[2]};
    if (opts.probabilities_npz) preprocessing::write_npz_float32(base + ".npz", "probabilities", shape, probs->data());
    if (opts.probabilities_npy) {
      preprocessing::write_npy(base + "_probabilities.npy", "<f4", shape, probs->data(), probs->size() * sizeof(float));
      write_json(base + "_probabilities.json",
                 io::probabilities_meta({labels.values, labels.regions}, shape, seg.geometry()));
    }
  }
  if (!opts.postprocessing.empty()) seg = postprocessing::apply_postprocessing(seg, opts.postprocessing);
  if (opts.write_segmentation) io::write_image(base + file_ending, seg);
  return seg;
}

}  // namespace medseg::inference
