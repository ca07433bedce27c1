#include "inference/placement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace medseg::inference {

SlabMode parse_slab_mode(const std::string& value) {
  if (value == "auto") return SlabMode::Auto;
  if (value == "always") return SlabMode::Always;
  if (value == "never") return SlabMode::Never;
  throw Error("--slabs: '" + value + "' is not auto, always or never");
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / 1073741824.0);
  return buf;
}

namespace {
double product(const std::vector<int64_t>& s) {
  double v = 1;
  for (int64_t n : s) v *= static_cast<double>(n);
  return v;
}
double product(const Shape3& s) {
  return static_cast<double>(s[0]) * static_cast<double>(s[1]) * static_cast<double>(s[2]);
}
}  // namespace

CaseMemory case_memory(const CaseSize& s, const WindowShape& w, bool on_device, bool half, bool probabilities) {
  const double K = static_cast<double>(s.classes), C = static_cast<double>(s.channels);
  const double padded = w.padded_voxels(), image = product(s.preprocessed), slab = w.slab_voxels();
  const double acc = half ? 2.0 : 4.0;
  // The image on the GPU, or in host memory a padded copy (none when no axis is padded).
  const double image_device = 4 * C * padded, image_host = padded > image ? 4 * C * padded : 0.0;
  // A slab is handed over in chunks of max(1, thickness / 32) slices (SlidingWindow::stream).
  const double thick = static_cast<double>(w.patch[static_cast<size_t>(w.axis)]);
  const double chunk = slab * std::max(1.0, std::floor(thick / 32)) / thick;
  const double arrays = 4 * C * image;  // the preprocessed case, in host memory while it is predicted
  // A batch's logits (tile_batch of them), then per tile a flipped copy and the copies' sum.
  double patch_voxels = 1;
  for (int64_t n : w.patch) patch_voxels *= static_cast<double>(n);
  const double batch = 4 * K * patch_voxels * static_cast<double>(std::max<int64_t>(1, s.tile_batch) + 2);
  // Accumulators (K logits + 1 weight), then the finished logits: the quotient in the accumulators'
  // type (and its float copy when that is fp16).
  const double finished = half ? 6.0 : 4.0;
  const double whole = (K + 1) * padded * acc + finished * K * image;
  CaseMemory m;
  m.whole_device = image_device + whole + batch;
  // GPU: the finished logits come back; CPU (or --not_on_device): everything happens in host memory.
  m.whole_host = arrays + (on_device ? 4 * K * image : image_host + whole + batch);
  m.slabs_device = image_device + (K + 1) * slab * acc + finished * K * chunk + batch;
  m.slabs_host = arrays + image_host + (K + 1) * slab * acc + 8 * K * chunk + batch;
  // Export: three planes of every class in double (two input slices kept, one output being made), the
  // segmentation on the cropped grid, uncropped and as the written volume; probabilities: every
  // resampled class, uncropped, and once more when reoriented.
  const double plane = product(s.cropped) /
                       static_cast<double>(std::max<int64_t>(1, std::min({s.cropped[0], s.cropped[1], s.cropped[2]})));
  m.export_host = 3 * 8 * K * plane + 2 * product(s.cropped) + 4 * product(s.original);
  if (probabilities) m.export_host += 4 * K * product(s.cropped) + 8 * K * product(s.original);
  return m;
}

namespace {
bool fits(double bytes, int64_t free) { return free <= 0 || bytes <= kUsableFraction * static_cast<double>(free); }

// Whether the whole logits fit where they would go (on the GPU with the export in host memory, or all in host
// memory); `why` then says so.
bool whole_logits_fit(const CaseMemory& m, const PlacementRequest& r, bool device, std::string& why) {
  const double host_whole = m.whole_host + m.export_host;
  if (device && fits(m.whole_device, r.device_free) && fits(host_whole, r.host_free)) {
    why = "whole logits on the GPU (" + gib(m.whole_device) + ")";
    return true;
  }
  if (!device && fits(host_whole, r.host_free)) {
    why = "whole logits in host memory (" + gib(host_whole) + ")";
    return true;
  }
  return false;
}
}  // namespace

Placement decide_placement(const CaseMemory& m, const PlacementRequest& r) {
  const bool device = r.cuda && !r.not_on_device;
  const std::string where = device ? "GPU" : "host";
  Placement p;
  p.on_host = !device;
  if (!r.slabs_possible || r.mode == SlabMode::Never) {
    p.why = std::string(r.slabs_possible ? "--slabs never" : "slabs are not possible here") + ": whole logits on the " +
            where;
    return p;
  }
  if (r.mode != SlabMode::Always && whole_logits_fit(m, r, device, p.why)) return p;
  p.slabs = true;
  const double host_whole = m.whole_host + m.export_host;
  const std::string whole = device ? gib(m.whole_device) + " on the GPU" : gib(host_whole) + " of host memory";
  const std::string reason = r.mode == SlabMode::Always ? "--slabs always" : "whole logits would need " + whole;
  if (device && !fits(m.slabs_device, r.device_free)) p.on_host = true;
  p.why = reason + "; in slabs " +
          (p.on_host ? "in host memory (" + gib(m.slabs_host + m.export_host) + ")"
                     : "on the GPU (" + gib(m.slabs_device) + ")");
  return p;
}

bool next_placement(Placement& p, bool cuda, bool slabs_possible) {
  if (!slabs_possible) return false;
  if (!p.slabs) {
    p.slabs = true;
    p.on_host = !cuda || p.on_host;
    return true;
  }
  if (!p.on_host) {
    p.on_host = true;
    return true;
  }
  return false;
}

}  // namespace medseg::inference
