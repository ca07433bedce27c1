#pragma once
// nnU-Net's overlay pictures (nnUNetv2_plot_overlay_pngs): per case, the slice (along array axis 0) where
// the labels are most present, drawn as an RGB picture with each label tinted. The same rules as nnU-Net's
// utilities/overlay_plots.py, so that pictures of both tools can be compared side by side:
//   - the slice: for each label value > 0 its share of the case's voxels of that label per slice, averaged
//     over the labels; the slice with the largest average (the first on ties);
//   - the picture: the slice scaled to [0, 255], then every label value present (background 0 included,
//     whose color is black) adds overlay_intensity x its color (the k-th smallest value takes the k-th color
//     of nnU-Net's cycle), and the result is scaled to [0, 255] again.
// Needs no cairo: the PNG is written with libpng.
#include <cstdint>
#include <string>
#include <vector>

namespace medseg::visualization {

// Array-axis-0 index of the slice to draw; `seg` is (Z, Y, X) with z = `nz`, each slice `n_slice` voxels.
int64_t select_overlay_slice(const std::vector<int>& seg, int64_t nz, int64_t n_slice);

// RGB bytes (row-major, 3 per pixel) of one slice: `image` and `seg` hold h x w values.
std::vector<uint8_t> overlay_rgb(const float* image, const int* seg, int64_t h, int64_t w, double overlay_intensity);

// Writes h x w RGB bytes as an 8-bit PNG, atomically. FileError naming the file when it cannot.
void write_rgb_png(const std::string& path, const std::vector<uint8_t>& rgb, int64_t h, int64_t w);

}  // namespace medseg::visualization
