#include "visualization/slice_overlay.h"

#include <png.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "core/error.h"
#include "core/json_io.h"

namespace medseg::visualization {
namespace {

// nnU-Net's color_cycle (overlay_plots.py), as RGB.
constexpr std::array<uint32_t, 15> kColors = {0x000000, 0x4363d8, 0xf58231, 0x3cb44b, 0xe6194b,
                                              0x911eb4, 0xffe119, 0xbfef45, 0x42d4f4, 0xf032e6,
                                              0x000075, 0x9a6324, 0x808000, 0x800000, 0x469990};

}  // namespace

int64_t select_overlay_slice(const std::vector<int>& seg, int64_t nz, int64_t n_slice) {
  std::map<int, std::vector<double>> per_label;  // label > 0 -> its voxels per slice, labels in ascending order
  for (int64_t z = 0; z < nz; ++z)
    for (int64_t i = 0; i < n_slice; ++i) {
      const int v = seg[static_cast<size_t>(z * n_slice + i)];
      if (v <= 0) continue;
      auto& counts = per_label[v];
      if (counts.empty()) counts.assign(static_cast<size_t>(nz), 0.0);
      counts[static_cast<size_t>(z)] += 1;
    }
  if (per_label.empty()) return 0;
  // nnU-Net divides each label's column by the sum of the whole table filled so far (the earlier labels'
  // normalised columns included), not by the column's own sum: kept, so both tools pick the same slice.
  std::vector<double> sum(static_cast<size_t>(nz), 0.0);
  double table = 0;
  for (auto& [label, counts] : per_label) {
    double column = 0;
    for (double c : counts) column += c;
    const double divisor = table + column;
    table = 0;
    for (int64_t z = 0; z < nz; ++z) {
      counts[static_cast<size_t>(z)] /= divisor;
      sum[static_cast<size_t>(z)] += counts[static_cast<size_t>(z)];
    }
    for (double s : sum) table += s;
  }
  return std::max_element(sum.begin(), sum.end()) - sum.begin();  // the mean's argmax is the sum's
}

std::vector<uint8_t> overlay_rgb(const float* image, const int* seg, int64_t h, int64_t w, double overlay_intensity) {
  const auto n = static_cast<size_t>(h * w);
  const auto [lo, hi] = std::minmax_element(image, image + n);
  const double range = n ? static_cast<double>(*hi) - *lo : 0.0;
  std::vector<double> rgb(3 * n);
  for (size_t i = 0; i < n; ++i) {
    const double g = range > 0 ? (image[i] - *lo) / range * 255.0 : 0.0;
    rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = g;
  }
  const std::set<int> values(seg, seg + n);
  std::map<int, uint32_t> color;
  size_t k = 0;
  for (int v : values) color[v] = kColors[k++ % kColors.size()];
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = color.at(seg[i]);
    for (int ch = 0; ch < 3; ++ch)
      rgb[3 * i + ch] += overlay_intensity * static_cast<double>((c >> (16 - 8 * ch)) & 0xff);
  }
  const double top = rgb.empty() ? 0.0 : *std::max_element(rgb.begin(), rgb.end());
  std::vector<uint8_t> out(3 * n, 0);
  if (top > 0)
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<uint8_t>(rgb[i] / top * 255.0);  // numpy's astype truncates
  return out;
}

void write_rgb_png(const std::string& path, const std::vector<uint8_t>& rgb, int64_t h, int64_t w) {
  std::string bytes;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw FileError(path, "cannot start a PNG (out of memory)");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw FileError(path, "cannot encode the PNG");
  }
  png_set_write_fn(
      png, &bytes,
      [](png_structp p, png_bytep data, png_size_t len) {
        static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<const char*>(data), len);
      },
      nullptr);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int64_t y = 0; y < h; ++y) png_write_row(png, const_cast<png_bytep>(rgb.data() + 3 * y * w));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  write_file_atomic(path, bytes);
}

}  // namespace medseg::visualization
