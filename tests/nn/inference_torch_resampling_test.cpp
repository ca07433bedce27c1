// nnU-Net's resample_torch_fornnunet without torch (preprocessing/resampling_torch.h) against the same
// steps done with torch's own upsample ops: nnU-Net's function (nnunetv2 2.8.1,
// preprocessing/resampling/resample_torch.py) transcribed below in ATen calls, value for value, on odd
// sizes up and down, every separate axis, and label maps with -1 and ties. Bit for bit wherever torch runs
// its generic interpolation kernel (see generic_bilinear).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/volume.h"
#include "preprocessing/resampling_torch.h"

using namespace medseg;
using namespace medseg::preprocessing;

namespace {

at::Tensor as_tensor(const std::vector<float>& v, int channels, const Shape3& s) {
  return torch::from_blob(const_cast<float*>(v.data()), {channels, s[0], s[1], s[2]}, torch::kFloat32).clone();
}

std::vector<float> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.contiguous().to(torch::kFloat32);
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

// resample_torch_simple: F.interpolate(data[None].float(), size, mode)[0] (4D data: trilinear or
// nearest-exact; 3D data: bilinear), or the data itself when the size does not change.
at::Tensor simple(const at::Tensor& data, std::vector<int64_t> size, bool nearest) {
  bool same = true;
  for (std::size_t i = 0; i < size.size(); ++i) same = same && size[i] == data.size(static_cast<int64_t>(i) + 1);
  if (same) return data;
  const at::Tensor x = data.unsqueeze(0).to(torch::kFloat32);
  if (nearest) return at::_upsample_nearest_exact3d(x, size, c10::nullopt, c10::nullopt, c10::nullopt)[0];
  if (data.dim() == 3) return at::upsample_bilinear2d(x, size, false, c10::nullopt, c10::nullopt)[0];
  return at::upsample_trilinear3d(x, size, false, c10::nullopt, c10::nullopt, c10::nullopt)[0];
}

// The seg branch of resample_torch_simple: masks x 1000 interpolated into fp16, > 700 takes the label,
// argmax over the fp16 values where no mask does.
at::Tensor simple_seg(const at::Tensor& seg, std::vector<int64_t> size, bool nearest) {
  bool same = true;
  for (std::size_t i = 0; i < size.size(); ++i) same = same && size[i] == seg.size(static_cast<int64_t>(i) + 1);
  if (same) return seg;
  const at::Tensor values = std::get<0>(at::_unique(seg, /*sorted=*/true));
  std::vector<int64_t> out_shape{seg.size(0)};
  out_shape.insert(out_shape.end(), size.begin(), size.end());
  at::Tensor result = torch::zeros(out_shape, torch::kInt16);
  std::vector<int64_t> tmp_shape{values.size(0)};
  tmp_shape.insert(tmp_shape.end(), out_shape.begin(), out_shape.end());
  at::Tensor tmp = torch::empty(tmp_shape, torch::kFloat16);
  at::Tensor done = torch::zeros(out_shape, torch::kBool);
  for (int64_t i = 0; i < values.size(0); ++i) {
    const at::Tensor mask = (seg == values[i]).to(torch::kFloat32) * 1000;
    tmp[i].copy_(simple(mask, size, nearest));
    const at::Tensor on = tmp[i] > 700.0;
    result.masked_fill_(on, values[i].item<int64_t>());
    done.logical_or_(on);
  }
  if (!done.all().item<bool>()) {
    const at::Tensor open = done.logical_not();
    result.index_put_({open}, values.index({tmp.index({torch::indexing::Slice(), open}).argmax(0)}).to(torch::kInt16));
  }
  return result;
}

// resample_torch_fornnunet: `data` (C, Z, Y, X); separate z folds the axis into the channels, interpolates
// the other two bilinearly, then nearest-exact along it.
at::Tensor reference(const at::Tensor& data, const Shape3& out, const SeparateZ& sep, bool seg) {
  auto step = [seg](const at::Tensor& d, std::vector<int64_t> size, bool nearest) {
    return seg ? simple_seg(d, size, nearest) : simple(d, size, nearest);
  };
  const std::vector<int64_t> full{out[0], out[1], out[2]};
  if (!sep.enabled) return step(data, full, false);
  const int a = sep.axis;
  std::vector<int64_t> others;
  for (int i = 0; i < 3; ++i)
    if (i != a) others.push_back(i + 1);
  const int64_t C = data.size(0), A = data.size(a + 1);
  const at::Tensor folded =
      data.permute({0, a + 1, others[0], others[1]}).reshape({C * A, data.size(others[0]), data.size(others[1])});
  const at::Tensor inplane = step(folded, {out[others[0] - 1], out[others[1] - 1]}, false);
  std::vector<int64_t> back(4);  // the inverse of (0, a + 1, others...)
  const std::vector<int64_t> order{0, a + 1, others[0], others[1]};
  for (int i = 0; i < 4; ++i) back[order[i]] = i;
  const at::Tensor unfolded = inplane.reshape({C, A, inplane.size(1), inplane.size(2)}).permute(back);
  return step(unfolded, full, true);
}

std::vector<float> random_normal(std::mt19937& rng, int64_t n) {
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

struct Case {
  Shape3 in, out;
};

const Case kCases[] = {
    {{7, 9, 11}, {13, 5, 11}},    {{5, 6, 7}, {9, 11, 4}},    {{12, 10, 9}, {7, 23, 17}}, {{3, 31, 29}, {8, 17, 30}},
    {{10, 30, 30}, {13, 34, 26}}, {{9, 8, 8}, {9, 16, 4}},    {{1, 12, 13}, {1, 19, 7}},  {{6, 6, 6}, {6, 6, 7}},
    {{5, 90, 70}, {7, 67, 81}},   {{70, 4, 66}, {61, 3, 75}}, {{64, 70, 3}, {80, 61, 5}},
};

// torch's bilinear kernel for slices whose output height + width is at most 128 is another one
// (cpu_upsample_linear_channels_last), rounded differently by the CPU's vector width; medseg writes out the
// generic kernel, which larger slices and every trilinear call take. The separate-z step is bilinear over
// the two axes other than `axis`.
bool generic_bilinear(const Shape3& out, int axis) {
  int64_t sum = 0;
  for (int a = 0; a < 3; ++a) sum += a == axis ? 0 : out[a];
  return sum > 128;
}

}  // namespace

TEST(TorchResampling, DataEqualsTorchInterpolateBitForBit) {
  std::mt19937 rng(5);
  for (const Case& c : kCases)
    for (int axis = -1; axis < 3; ++axis) {
      const SeparateZ sep{axis >= 0, axis};
      const int channels = 2;
      const std::vector<float> data = random_normal(rng, channels * c.in[0] * c.in[1] * c.in[2]);
      const std::vector<float> got = resample_data_torch(data, channels, c.in, c.out, sep);
      const std::vector<float> want = to_vector(reference(as_tensor(data, channels, c.in), c.out, sep, false));
      ASSERT_EQ(got.size(), want.size());
      const bool exact = axis < 0 || generic_bilinear(c.out, axis);
      std::size_t differ = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        differ += exact ? got[i] != want[i] : std::abs(got[i] - want[i]) > 1e-6f * std::max(1.0f, std::abs(want[i]));
      EXPECT_EQ(differ, 0u) << shape_str(c.in) << " -> " << shape_str(c.out) << ", separate axis " << axis
                            << (exact ? " (bit for bit)" : " (within a float step)");
    }
}

TEST(TorchResampling, SegmentationEqualsNnunetsMaskArgmax) {
  std::mt19937 rng(11);
  for (const Case& c : kCases)
    for (int axis = -1; axis < 3; ++axis) {
      const SeparateZ sep{axis >= 0, axis};
      // blocky labels -1..3 (so interpolated masks tie and fall under 700 often), as nnU-Net's seg holds them
      std::vector<int16_t> seg(static_cast<std::size_t>(c.in[0] * c.in[1] * c.in[2]));
      std::uniform_int_distribution<int> label(-1, 3);
      for (std::size_t i = 0; i < seg.size(); ++i) seg[i] = static_cast<int16_t>(i % 3 == 0 ? label(rng) : seg[i - 1]);
      const std::vector<int16_t> got = resample_seg_torch(seg, c.in, c.out, sep);
      const at::Tensor t = torch::from_blob(seg.data(), {1, c.in[0], c.in[1], c.in[2]}, torch::kInt16).clone();
      const at::Tensor want = reference(t, c.out, sep, true).contiguous().to(torch::kInt16);
      ASSERT_EQ(static_cast<int64_t>(got.size()), want.numel());
      const int16_t* w = want.data_ptr<int16_t>();
      std::size_t differ = 0;
      for (std::size_t i = 0; i < got.size(); ++i) differ += got[i] != w[i];
      EXPECT_EQ(differ, 0u) << shape_str(c.in) << " -> " << shape_str(c.out) << ", separate axis " << axis;
    }
}

TEST(TorchResampling, MemoryEfficientSegmentationByHand) {
  // 1 x 1 x 4 -> 1 x 1 x 8, labels 0 0 2 2: torch's linear weights put 0.75/0.25 around the step, so the
  // mask of 2 is 0, 0, 0, 0.25, 0.75, 1, 1, 1 (> 0.5 from index 4); label 0 painted first, then 2 on top.
  const std::vector<int16_t> seg{0, 0, 2, 2};
  const std::vector<int16_t> got = resample_seg_torch(seg, {1, 1, 4}, {1, 1, 8}, {}, true);
  EXPECT_EQ(got, (std::vector<int16_t>{0, 0, 0, 0, 2, 2, 2, 2}));
  // Unchanged shapes come back as they are.
  EXPECT_EQ(resample_seg_torch(seg, {1, 1, 4}, {1, 1, 4}, {}, false), seg);
}
