// ITK implementation of the kernels in io/resample.h.
//
// Geometry trick: the input image gets spacing 1 and origin 0 (index space), the output image gets
// spacing n/m and origin 0.5*n/m - 0.5 per axis, so ResampleImageFilter (identity transform) samples
// output index o at input continuous index (o + 0.5) * n/m - 0.5: skimage's pixel-area-aligned
// mapping. Those positions lie within [-0.5, n - 0.5], which ITK counts as inside the buffer, so the
// default pixel value is never used.
#include <itkBSplineInterpolateImageFunction.h>
#include <itkImage.h>
#include <itkLinearInterpolateImageFunction.h>
#include <itkNearestNeighborInterpolateImageFunction.h>
#include <itkResampleImageFilter.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/itk_globals.h"
#include "preprocessing/skimage_resize.h"

namespace medseg::preprocessing {

namespace {

// Positions that fall exactly halfway between two voxels must round up (scipy's order-0 rule), but
// ITK interpolates scanline positions as start + (i/m) * n, which can land a hair below the tie.
constexpr double kNearestTieNudge = 1e-7;

void check_args(const Shape3& in, const Shape3& out, int order) {
  for (int a = 0; a < 3; ++a)
    MEDSEG_CHECK(in[a] >= 1 && out[a] >= 1, "resample: empty shape (input ", in[a], ", output ", out[a], " along axis ",
                 a, ")");
  MEDSEG_CHECK(order >= 0 && order <= 5, "resample: interpolation order ", order, " not in 0..5");
}

// Copies `src` (shape `in`) into a buffer padded by `pad[a]` replicated border voxels per side.
std::vector<float> pad_edge(const float* src, const Shape3& in, const Shape3& pad) {
  const Shape3 p{in[0] + 2 * pad[0], in[1] + 2 * pad[1], in[2] + 2 * pad[2]};
  std::vector<float> out(static_cast<std::size_t>(p[0] * p[1] * p[2]));
  auto clampi = [](int64_t v, int64_t n) { return std::min(std::max<int64_t>(v, 0), n - 1); };
  float* o = out.data();
  for (int64_t z = 0; z < p[0]; ++z) {
    const int64_t sz = clampi(z - pad[0], in[0]);
    for (int64_t y = 0; y < p[1]; ++y) {
      const float* row = src + (sz * in[1] + clampi(y - pad[1], in[1])) * in[2];
      for (int64_t x = 0; x < pad[2]; ++x) *o++ = row[0];
      o = std::copy(row, row + in[2], o);
      for (int64_t x = 0; x < pad[2]; ++x) *o++ = row[in[2] - 1];
    }
  }
  return out;
}

// Resamples a D-dimensional array (the last D axes of `in`/`out`; for D == 2 in[0] == out[0] == 1).
// ITK's dimension d is array axis 2 - d.
template <unsigned D>
void resample_itk(const float* src, const Shape3& in, float* dst, const Shape3& out, int order) {
  io::init_itk_globals_once();
  using Image = itk::Image<float, D>;
  const int64_t pad = order >= 2 ? kSplineEdgePad : 0;
  Shape3 pads{0, 0, 0};
  for (unsigned d = 0; d < D; ++d) pads[2 - d] = pad;

  std::vector<float> padded;
  const float* buffer = src;
  if (pad > 0) {
    padded = pad_edge(src, in, pads);
    buffer = padded.data();
  }

  auto image = Image::New();
  typename Image::SizeType size;
  typename Image::PointType origin;
  typename Image::SizeType out_size;
  typename Image::SpacingType out_spacing;
  typename Image::PointType out_origin;
  std::size_t n_in = 1;
  for (unsigned d = 0; d < D; ++d) {
    const int a = 2 - static_cast<int>(d);
    size[d] = static_cast<itk::SizeValueType>(in[a] + 2 * pads[a]);
    n_in *= size[d];
    origin[d] = -static_cast<double>(pads[a]);  // physical = index of the unpadded array
    out_size[d] = static_cast<itk::SizeValueType>(out[a]);
    out_spacing[d] = static_cast<double>(in[a]) / static_cast<double>(out[a]);
    out_origin[d] = 0.5 * out_spacing[d] - 0.5 + (order == 0 ? kNearestTieNudge : 0.0);
  }
  image->SetRegions(typename Image::RegionType(size));
  image->SetOrigin(origin);
  // Read-only view of our buffer: ITK does not own or modify it.
  image->GetPixelContainer()->SetImportPointer(const_cast<float*>(buffer), n_in, false);

  using Filter = itk::ResampleImageFilter<Image, Image, double, double>;
  auto filter = Filter::New();
  filter->SetInput(image);
  if (order == 0) {
    filter->SetInterpolator(itk::NearestNeighborInterpolateImageFunction<Image, double>::New());
  } else if (order == 1) {
    filter->SetInterpolator(itk::LinearInterpolateImageFunction<Image, double>::New());
  } else {
    auto spline = itk::BSplineInterpolateImageFunction<Image, double, double>::New();
    spline->SetSplineOrder(static_cast<unsigned>(order));
    filter->SetInterpolator(spline);
  }
  filter->SetSize(out_size);
  filter->SetOutputSpacing(out_spacing);
  filter->SetOutputOrigin(out_origin);
  filter->SetDefaultPixelValue(0.0f);
  // Parallelism is across cases (preprocessing -np); one work unit keeps a case on one core.
  filter->SetNumberOfWorkUnits(1);
  filter->Update();
  const float* res = filter->GetOutput()->GetBufferPointer();
  std::copy(res, res + out[0] * out[1] * out[2], dst);
}

void clip_to_range(const float* src, int64_t n_src, float* dst, int64_t n_dst) {
  if (n_src == 0) return;
  const auto mm = std::minmax_element(src, src + n_src);
  const float lo = *mm.first, hi = *mm.second;
  for (int64_t i = 0; i < n_dst; ++i) dst[i] = std::min(std::max(dst[i], lo), hi);
}

int64_t numel(const Shape3& s) { return s[0] * s[1] * s[2]; }

}  // namespace

bool resampling_available() { return true; }

void resize_3d(const float* src, const Shape3& in, float* dst, const Shape3& out, int order, bool clip) {
  check_args(in, out, order);
  if (in == out) {
    std::copy(src, src + numel(in), dst);
    return;
  }
  resample_itk<3>(src, in, dst, out, order);
  if (clip && order > 1) clip_to_range(src, numel(in), dst, numel(out));
}

void resize_slices(const float* src, const Shape3& in, int axis, float* dst, const Shape3& out, int order, bool clip) {
  check_args(in, out, order);
  MEDSEG_CHECK(axis >= 0 && axis <= 2, "resize_slices: axis must be 0, 1 or 2");
  MEDSEG_CHECK(in[axis] == out[axis], "resize_slices: the slice axis keeps its length (", in[axis], " -> ", out[axis],
               ")");
  if (in == out) {
    std::copy(src, src + numel(in), dst);
    return;
  }
  // The two in-plane axes in array order, and the slice shapes as (1, rows, cols).
  const int r = axis == 0 ? 1 : 0, c = axis == 2 ? 1 : 2;
  const Shape3 in2{1, in[r], in[c]}, out2{1, out[r], out[c]};
  const int64_t n_in2 = in2[1] * in2[2], n_out2 = out2[1] * out2[2];
  std::vector<float> slice_in(static_cast<std::size_t>(n_in2)), slice_out(static_cast<std::size_t>(n_out2));
  auto at = [](const Shape3& s, int ax, int64_t k, int a1, int64_t i1, int a2, int64_t i2) {
    Shape3 idx{0, 0, 0};
    idx[ax] = k;
    idx[a1] = i1;
    idx[a2] = i2;
    return (idx[0] * s[1] + idx[1]) * s[2] + idx[2];
  };
  for (int64_t k = 0; k < in[axis]; ++k) {
    for (int64_t i = 0; i < in2[1]; ++i)
      for (int64_t j = 0; j < in2[2]; ++j) slice_in[i * in2[2] + j] = src[at(in, axis, k, r, i, c, j)];
    resample_itk<2>(slice_in.data(), in2, slice_out.data(), out2, order);
    if (clip && order > 1) clip_to_range(slice_in.data(), n_in2, slice_out.data(), n_out2);
    for (int64_t i = 0; i < out2[1]; ++i)
      for (int64_t j = 0; j < out2[2]; ++j) dst[at(out, axis, k, r, i, c, j)] = slice_out[i * out2[2] + j];
  }
}

}  // namespace medseg::preprocessing
