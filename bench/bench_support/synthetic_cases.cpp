#include "bench_support/synthetic_cases.h"

#include <cmath>
#include <vector>

#include "data/rng.h"

namespace medseg::bench {

using data::class_locations_from_seg;
using data::InMemoryCase;
using data::InMemoryCaseSource;
using data::mix64;
using data::Rng;

InMemoryCase make_synthetic_case(const std::string& id, const Shape3& shape, int64_t channels, int num_labels,
                                 uint64_t seed) {
  Rng rng(seed);
  InMemoryCase c;
  c.id = id;
  c.shape = shape;
  c.channels = channels;
  const int64_t n = shape[0] * shape[1] * shape[2];
  c.data.assign(static_cast<size_t>(n * channels), 0.f);
  c.seg.assign(static_cast<size_t>(n), 0);
  struct Blob {
    double center[3], radius[3];
  };
  std::vector<Blob> blobs;
  for (int l = 0; l < num_labels; ++l) {
    Blob b{};
    for (int d = 0; d < 3; ++d) {
      b.radius[d] = shape[d] * rng.uniform(0.08, 0.2);
      b.center[d] = rng.uniform(b.radius[d] + 1, shape[d] - b.radius[d] - 1);
    }
    blobs.push_back(b);
  }
  std::vector<int> labels;
  for (int l = 1; l <= num_labels; ++l) labels.push_back(l);
  for (int64_t z = 0; z < shape[0]; ++z)
    for (int64_t y = 0; y < shape[1]; ++y)
      for (int64_t x = 0; x < shape[2]; ++x) {
        const int64_t v = (z * shape[1] + y) * shape[2] + x;
        const double p[3] = {double(z), double(y), double(x)};
        double r2 = 0;  // normalised distance from the centre: corners lie outside the mask
        for (int d = 0; d < 3; ++d) r2 += std::pow((p[d] - (shape[d] - 1) / 2.0) / (shape[d] / 2.0), 2);
        if (r2 > 2.2) {
          c.seg[v] = -1;
          continue;  // data stays 0 outside the mask, as after nnU-Net's normalisation with a mask
        }
        int label = 0;
        for (int l = 0; l < num_labels; ++l) {
          double q = 0;
          for (int d = 0; d < 3; ++d) q += std::pow((p[d] - blobs[l].center[d]) / blobs[l].radius[d], 2);
          if (q <= 1) label = l + 1;
        }
        c.seg[v] = static_cast<int8_t>(label);
        for (int64_t ch = 0; ch < channels; ++ch)
          c.data[ch * n + v] = static_cast<float>(0.5 * label + 0.1 * ch + 0.3 * (rng.uniform() - 0.5) +
                                                  0.2 * std::sin(0.3 * x + 0.2 * y + 0.1 * z));
      }
  c.locations = class_locations_from_seg(c.seg.data(), shape, labels);
  return c;
}

std::shared_ptr<InMemoryCaseSource> make_synthetic_source(int64_t n, const Shape3& min_shape, const Shape3& max_shape,
                                                          int64_t channels, int num_labels, uint64_t seed) {
  auto src = std::make_shared<InMemoryCaseSource>();
  Rng rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    Shape3 s;
    for (int d = 0; d < 3; ++d) s[d] = rng.randint(min_shape[d], max_shape[d]);
    char name[32];
    std::snprintf(name, sizeof(name), "case_%03lld", static_cast<long long>(i));
    src->add(make_synthetic_case(name, s, channels, num_labels, mix64(seed + static_cast<uint64_t>(i))));
  }
  return src;
}

}  // namespace medseg::bench
