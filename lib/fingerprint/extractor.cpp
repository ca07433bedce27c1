#include "fingerprint/extractor.h"

#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "core/numeric.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "io/label_check.h"

namespace medseg::fingerprint {

int64_t samples_per_case(int64_t max_samples_total, int64_t n_cases) {
  MEDSEG_CHECK(n_cases > 0, "fingerprint: the dataset has no cases");
  return std::max<int64_t>(1, max_samples_total / n_cases);
}

namespace {

std::vector<uint8_t> foreground_of(const Volume& seg) {
  std::vector<uint8_t> fg(static_cast<std::size_t>(seg.numel()));
  visit_pixels(seg, [&](const auto* p) {
    for (std::size_t i = 0; i < fg.size(); ++i) fg[i] = p[i] > 0;
  });
  return fg;
}

std::vector<float> values_at(const Volume& v, const std::vector<uint8_t>& fg, int64_t count) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(count));
  visit_pixels(v, [&](const auto* p) {
    for (std::size_t i = 0; i < fg.size(); ++i)
      if (fg[i]) out.push_back(static_cast<float>(p[i]));
  });
  return out;
}

}  // namespace

CaseAnalysis analyze_case(const io::LoadedCase& c, int64_t num_samples, bool exact, uint64_t seed) {
  CropResult crop = crop_to_nonzero(c.channels, c.label.numel() > 0 ? &c.label : nullptr);
  CaseAnalysis a;
  a.record.id = c.id;
  a.record.shape_before_crop = crop.shape_before;
  a.record.bbox = crop.bbox;
  a.record.relative_size_after_cropping = crop.relative_size();
  a.spacing = c.geometry().spacing_zyx();
  a.shape_after_crop = crop.shape_after();

  const std::vector<uint8_t> fg = foreground_of(crop.seg);
  int64_t n_fg = 0;
  for (uint8_t f : fg) n_fg += f;
  a.record.num_foreground_voxels = n_fg;

  std::mt19937_64 rng(seed);  // one stream per case, shared by the channels in order
  for (const Volume& ch : crop.channels) {
    std::vector<float> values = values_at(ch, fg, n_fg);
    a.record.stats.push_back(compute_intensity_stats(values));
    if (exact)
      a.samples.push_back(std::move(values));
    else
      a.samples.push_back(sample_with_replacement(values, num_samples, rng));
  }
  return a;
}

namespace {

// Concatenates the per-case samples of channel `c` in case order, freeing each case's part.
std::vector<float> gather_channel(std::vector<CaseAnalysis>& results, int c) {
  std::size_t total = 0;
  for (const auto& r : results) total += r.samples[c].size();
  std::vector<float> all;
  all.reserve(total);
  for (auto& r : results) {
    all.insert(all.end(), r.samples[c].begin(), r.samples[c].end());
    std::vector<float>().swap(r.samples[c]);
  }
  return all;
}

void check_finite(const CaseAnalysis& a, const io::CaseFiles& files) {
  for (std::size_t c = 0; c < a.record.stats.size(); ++c)
    MEDSEG_CHECK_FILE(a.record.num_foreground_voxels <= 0 || std::isfinite(a.record.stats[c].mean), files.images[c],
                      "contains NaN or infinite values inside the foreground");
}

}  // namespace

DatasetFingerprint extract_fingerprint(const std::vector<io::CaseFiles>& cases, int num_channels,
                                       const ExtractOptions& o) {
  const int64_t n = static_cast<int64_t>(cases.size());
  const int64_t per_case = samples_per_case(o.max_samples_total, n);
  if (o.exact_stats)
    spdlog::info("statistics over every foreground voxel (memory grows with the total foreground)");
  else
    spdlog::info("{} foreground samples per case and channel; the pool needs about {:.0f} MB", per_case,
                 4.0 * static_cast<double>(per_case) * static_cast<double>(n) * num_channels / 1e6);
  std::vector<CaseAnalysis> results(cases.size());
  const auto t0 = std::chrono::steady_clock::now();
  {
    ProgressBar bar("fingerprint", n, o.progress);
    parallel_for(n, o.threads, [&](int64_t i) {
      const io::CaseFiles& files = cases[i];
      const io::LoadedCase loaded = io::load_case(files, o.reorient_to_ras);
      // Counted after reading: one RGB .png holds three channels (io/image_formats.h).
      MEDSEG_CHECK(static_cast<int>(loaded.channels.size()) == num_channels, "case '", files.id, "' has ",
                   loaded.channels.size(), " channel(s) in ", files.images.size(),
                   " image file(s) but the dataset declares ", num_channels, " channel(s)");
      if (loaded.label.numel() > 0 && !o.label_values.empty())
        io::check_label_values(loaded.label, o.label_values, files.label, files.id);
      CaseAnalysis a = analyze_case(loaded, per_case, o.exact_stats, o.seed);
      check_finite(a, files);
      results[i] = std::move(a);
      bar.tick();
    });
    bar.finish();
  }

  DatasetFingerprint fp;
  fp.has_medseg = true;
  fp.exact_stats = o.exact_stats;
  fp.samples_per_case = o.exact_stats ? 0 : per_case;
  fp.max_samples_total = o.max_samples_total;
  fp.seed = o.seed;
  std::vector<double> rel;
  for (auto& r : results) {
    fp.shapes_after_crop.push_back(r.shape_after_crop);
    fp.spacings.push_back(r.spacing);
    rel.push_back(r.record.relative_size_after_cropping);
    fp.cases.push_back(r.record);
  }
  fp.median_relative_size_after_cropping = median(rel);
  const auto t1 = std::chrono::steady_clock::now();
  // Channels are independent: their statistics (selection over up to 1e8 samples each) run in parallel.
  fp.intensity_per_channel.resize(num_channels);
  parallel_for(num_channels, o.threads, [&](int64_t c) {
    std::vector<float> all = gather_channel(results, static_cast<int>(c));
    MEDSEG_CHECK(!all.empty(),
                 "no training case has foreground (label > 0) voxels: cannot compute intensity statistics");
    spdlog::debug("channel {}: statistics over {} foreground samples", c, all.size());
    fp.intensity_per_channel[c] = compute_intensity_stats(all);
  });
  const auto t2 = std::chrono::steady_clock::now();
  spdlog::debug("fingerprint: cases {:.2f} s, statistics {:.2f} s", std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count());
  return fp;
}

}  // namespace medseg::fingerprint
