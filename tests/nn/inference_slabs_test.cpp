// Prediction in slabs (docs/predict.md, "Large volumes"): the sliding window's slabs put together
// are its whole-image logits bit for bit; a slab holds a patch-thick accumulator (counted by the
// counting allocator); the slab-wise export matches torch's own interpolation (trilinear, bilinear +
// nearest-exact for separate z), whatever the slab sizes; the placement follows the memory model's
// hand-computed bytes; an allocation failure of the whole prediction predicts the case again in
// slabs, with the same segmentation.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core_torch/torch_memory.h"
#include "inference/export.h"
#include "inference/model_folder.h"
#include "inference/placement.h"
#include "inference/predictor.h"
#include "inference/slab_export.h"
#include "inference/sliding_window.h"
#include "inference_test_util.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::inference;

namespace {

// A fixed random 3D convolution as the network (1 -> K channels); 2D for a 2D patch.
struct ConvNet {
  torch::nn::Conv3d conv3{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  ConvNet(int64_t classes, int seed) {
    torch::manual_seed(seed);
    conv3 = torch::nn::Conv3d(torch::nn::Conv3dOptions(1, classes, 3).padding(1));
    conv2 = torch::nn::Conv2d(torch::nn::Conv2dOptions(1, classes, 3).padding(1));
  }
  NetworkFn fn() {
    return [this](const at::Tensor& x) { return x.dim() == 5 ? conv3->forward(x) : conv2->forward(x); };
  }
};

struct Streamed {
  at::Tensor logits;
  int64_t axis = -1;
  int slabs = 0;
};

Streamed stream_all(const NetworkFn& net, const at::Tensor& image, int64_t K, const SlidingWindowOptions& o) {
  const SlidingWindow w(image, K, o);
  Streamed s;
  s.axis = w.axis();
  std::vector<at::Tensor> parts;
  int64_t next = 0;
  w.stream(net, [&](int64_t begin, const at::Tensor& l) {
    EXPECT_EQ(begin, next);
    EXPECT_TRUE(l.is_contiguous());
    next = begin + l.size(s.axis + 1);
    parts.push_back(l.clone());
  });
  EXPECT_EQ(next, image.size(s.axis + 1));
  s.slabs = static_cast<int>(parts.size());
  s.logits = at::cat(parts, s.axis + 1);
  return s;
}

SlidingWindowOptions options(std::vector<int64_t> patch, std::vector<int64_t> mirror = {}) {
  SlidingWindowOptions o;
  o.patch_size = std::move(patch);
  o.mirror_axes = std::move(mirror);
  o.max_batch = 4;
  return o;
}

}  // namespace

TEST(PredictionSlabs, SlabsPutTogetherAreTheWholeLogitsBitForBit) {
  torch::NoGradGuard ng;
  ConvNet net(3, 5);
  struct Case {
    std::vector<int64_t> image;
    std::vector<int64_t> patch;
    int64_t axis;  // the axis with the most tile positions (ties: the longer): sharded prediction's split
  };
  const std::vector<Case> cases{
      {{45, 20, 23}, {16, 16, 16}, 0},  // 5 positions along z, 2 and 2 in-plane
      {{20, 20, 60}, {16, 16, 16}, 2},  // 8 along x
      {{10, 40, 18}, {16, 16, 16}, 1},  // padded along z (10 < 16)
      {{7, 30, 20}, {16, 16}, 0},       // a 2D network on a 3D image: one slice thick
  };
  for (const auto& c : cases) {
    torch::manual_seed(1);
    std::vector<int64_t> shape{1};
    shape.insert(shape.end(), c.image.begin(), c.image.end());
    const at::Tensor image = torch::randn(shape);
    const auto o = options(c.patch, c.patch.size() == 3 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{1});
    const at::Tensor whole = predict_sliding_window(net.fn(), image, 3, o);
    const Streamed s = stream_all(net.fn(), image, 3, o);
    EXPECT_EQ(s.axis, 0);  // slabs run along nnU-Net's outermost tile loop
    EXPECT_EQ(window_shape(c.image, c.patch, 0.5).axis, 0);
    EXPECT_EQ(window_shape(c.image, c.patch, 0.5, true).axis, c.axis);
    EXPECT_GT(s.slabs, 1);
    EXPECT_TRUE(torch::equal(s.logits, whole)) << "image " << c.image[0] << "x" << c.image[1] << "x" << c.image[2]
                                               << ": max difference " << (s.logits - whole).abs().max().item<float>();
  }
}

TEST(PredictionSlabs, ASlabHoldsAPatchThickAccumulatorWithinTheMemoryModel) {
  torch::NoGradGuard ng;
  const int64_t K = 8;
  // A network that allocates its output and nothing else (a broadcast product), so that the peak is
  // the sliding window's own (a convolution's workspace is the forward check's part, not the model's).
  const at::Tensor scale = torch::linspace(-1.0, 1.0, K).reshape({1, K, 1, 1, 1});
  const NetworkFn net = [&](const at::Tensor& x) { return x * scale; };
  torch::manual_seed(2);
  const at::Tensor image = torch::randn({1, 320, 32, 32});
  const auto o = options({16, 16, 16});
  int64_t whole_peak = 0, slab_peak = 0;
  {
    CpuPeakScope scope;
    const at::Tensor whole = predict_sliding_window(net, image, K, o);
    whole_peak = scope.peak_above_start();
  }
  {
    CpuPeakScope scope;
    const SlidingWindow w(image, K, o);
    w.stream(net, [](int64_t, const at::Tensor&) {});
    slab_peak = scope.peak_above_start();
  }
  CaseSize size;
  size.preprocessed = {320, 32, 32};
  size.cropped = size.original = {320, 32, 32};
  size.classes = K;
  size.tile_batch = o.max_batch;
  const CaseMemory model =
      case_memory(size, window_shape(size.preprocessed, o.patch_size, 0.5), false, o.half_accumulators, false);
  // The model counts the preprocessed case as well, which the scopes do not see (it lives before them).
  const double arrays = 4.0 * 320 * 32 * 32;
  EXPECT_LE(static_cast<double>(whole_peak), model.whole_host - arrays);
  EXPECT_GE(static_cast<double>(whole_peak), 0.5 * (model.whole_host - arrays));
  EXPECT_LE(static_cast<double>(slab_peak), model.slabs_host - arrays);
  EXPECT_GE(static_cast<double>(slab_peak), 0.3 * (model.slabs_host - arrays));
  EXPECT_GT(whole_peak, 4 * slab_peak) << "whole " << whole_peak << " B, slabs " << slab_peak << " B";
}

namespace {

preprocessing::CaseProperties properties(const Shape3& in, const Shape3& cropped, const preprocessing::Spacing3& after,
                                         const preprocessing::Spacing3& before) {
  preprocessing::CaseProperties p;
  p.original_shape = {cropped[0] + 2, cropped[1] + 3, cropped[2] + 1};
  p.shape_before_cropping = p.original_shape;
  p.bbox_used_for_cropping.lo = {1, 2, 0};
  p.bbox_used_for_cropping.hi = {1 + cropped[0], 2 + cropped[1], cropped[2]};
  p.shape_after_cropping_and_before_resampling = cropped;
  p.shape_after_resampling = in;
  p.spacing_after_resampling = after;
  p.spacing_before_resampling = before;
  p.original_spacing = before;
  return p;
}

// torch's reference on the cropped grid: order 1 everywhere (trilinear), or with separate z
// along axis 0 bilinear per slice, then nearest-exact along z (skimage's round-half-up).
at::Tensor torch_resampled(const at::Tensor& logits, const Shape3& out, bool separate_z) {
  if (!separate_z) return at::upsample_trilinear3d(logits.unsqueeze(0), {out[0], out[1], out[2]}, false).squeeze(0);
  at::Tensor planes = at::upsample_bilinear2d(logits.permute({1, 0, 2, 3}), {out[1], out[2]}, false);  // (Z, K, y, x)
  planes = planes.permute({1, 0, 2, 3}).unsqueeze(0);
  return at::_upsample_nearest_exact3d(planes, {out[0], out[1], out[2]}).squeeze(0);
}

// Uncropped (transposed) original grid with `fill` outside the crop box.
at::Tensor uncropped(const at::Tensor& cropped, const preprocessing::CaseProperties& p, float fill) {
  const auto& s = p.original_shape;
  at::Tensor full = at::full({cropped.size(0), s[0], s[1], s[2]}, fill);
  const auto& lo = p.bbox_used_for_cropping.lo;
  full.narrow(1, lo[0], cropped.size(1))
      .narrow(2, lo[1], cropped.size(2))
      .narrow(3, lo[2], cropped.size(3))
      .copy_(cropped);
  return full;
}

Volume slab_export(const at::Tensor& logits, const preprocessing::CaseProperties& p, const LabelMapping& labels,
                   const ExportOptions& eo, int64_t axis, const std::vector<int64_t>& cuts, std::vector<float>* probs) {
  SlabExport ex(p, labels, eo, axis, probs != nullptr);
  int64_t begin = 0;
  for (int64_t end : cuts) {
    ex.add(begin, logits.narrow(axis + 1, begin, end - begin).contiguous());
    begin = end;
  }
  return ex.finish(probs);
}

}  // namespace

TEST(PredictionSlabs, TheSlabExportMatchesTorchsInterpolationWhateverTheSlabs) {
  const int64_t K = 4;
  LabelMapping labels;
  labels.values = {0, 1, 2, 3};
  ExportOptions eo;  // order 1, order_z 0
  for (const bool sep : {false, true}) {
    SCOPED_TRACE(sep ? "separate z" : "trilinear");
    const Shape3 in{9, 14, 11}, cropped{13, 20, 7};
    const auto p = sep ? properties(in, cropped, {4.0, 1.0, 1.0}, {2.77, 0.7, 1.57})
                       : properties(in, cropped, {1.0, 1.0, 1.0}, {0.7, 0.7, 1.57});
    torch::manual_seed(sep ? 7 : 8);
    const at::Tensor logits = torch::randn({K, in[0], in[1], in[2]});
    const at::Tensor ref = torch_resampled(logits, cropped, sep);
    const at::Tensor ref_prob = uncropped(at::softmax(ref, 0), p, 0.0f);
    ref_prob[0].masked_fill_(uncropped(at::ones({1, cropped[0], cropped[1], cropped[2]}), p, 0.0f)[0] == 0, 1.0f);
    const at::Tensor top2 = std::get<0>(ref.topk(2, 0));
    const at::Tensor clear = uncropped((top2[0] - top2[1] > 1e-4).unsqueeze(0).to(at::kFloat), p, 1.0f)[0] > 0;
    const at::Tensor ref_seg = uncropped(ref.argmax(0, true).to(at::kFloat), p, 0.0f)[0];

    std::vector<float> one_probs;
    const Volume one = slab_export(logits, p, labels, eo, 0, {in[0]}, &one_probs);
    for (const auto& [axis, cuts] : std::vector<std::pair<int64_t, std::vector<int64_t>>>{
             {0, {in[0]}}, {0, {2, 3, 9}}, {1, {1, 5, 6, 14}}, {2, {4, 11}}}) {
      std::vector<float> probs;
      const Volume seg = slab_export(logits, p, labels, eo, axis, cuts, &probs);
      ASSERT_EQ(seg.shape(), p.original_shape);
      const at::Tensor got =
          torch::from_blob(const_cast<uint8_t*>(seg.data<uint8_t>()),
                           {p.original_shape[0], p.original_shape[1], p.original_shape[2]}, at::kByte)
              .to(at::kFloat);
      EXPECT_EQ(((got != ref_seg) & clear).sum().item<int64_t>(), 0) << "axis " << axis;
      const at::Tensor prob = torch::from_blob(probs.data(), ref_prob.sizes(), at::kFloat);
      EXPECT_LT((prob - ref_prob).abs().max().item<float>(), 2e-6f) << "axis " << axis;
      EXPECT_EQ(probs, one_probs) << "axis " << axis << ": the slabs change the numbers";
    }
  }
}

TEST(PredictionSlabs, RegionsArePaintedInOrderInEverySlab) {
  LabelMapping regions;
  regions.regions = true;
  regions.values = {1, 2, 3};
  const Shape3 in{6, 5, 4};
  const auto p = properties(in, in, {1, 1, 1}, {1, 1, 1});
  torch::manual_seed(3);
  const at::Tensor logits = torch::randn({3, in[0], in[1], in[2]});
  const Volume seg = slab_export(logits, p, regions, ExportOptions{}, 0, {1, 4, 6}, nullptr);
  for (int64_t z = 0; z < in[0]; ++z)
    for (int64_t y = 0; y < in[1]; ++y)
      for (int64_t x = 0; x < in[2]; ++x) {
        int expected = 0;
        for (int64_t k = 0; k < 3; ++k)
          if (logits[k][z][y][x].item<float>() > 0) expected = static_cast<int>(k) + 1;
        const auto lo = p.bbox_used_for_cropping.lo;
        const int64_t i = ((z + lo[0]) * p.original_shape[1] + y + lo[1]) * p.original_shape[2] + x + lo[2];
        ASSERT_EQ(seg.data<uint8_t>()[i], expected) << z << " " << y << " " << x;
      }
}

TEST(PredictionSlabs, SlabsOutOfOrderOrMissingAreRefused) {
  LabelMapping labels;
  labels.values = {0, 1};
  const Shape3 in{6, 5, 4};
  const auto p = properties(in, in, {1, 1, 1}, {1, 1, 1});
  const at::Tensor logits = torch::zeros({2, 6, 5, 4});
  SlabExport ex(p, labels, ExportOptions{}, 0, false);
  EXPECT_THROW(ex.add(2, logits.narrow(1, 2, 2).contiguous()), Error);
  ex.add(0, logits.narrow(1, 0, 3).contiguous());
  EXPECT_THROW(ex.finish(), Error);
  EXPECT_THROW(ex.add(3, logits.narrow(1, 0, 4).contiguous()), Error);  // past the end
  ExportOptions spline;
  spline.resample.orders = {3, 0};
  EXPECT_FALSE(SlabExport::supported(spline));
  EXPECT_THROW(SlabExport(p, labels, spline, 0, false), Error);
}

TEST(PredictionSlabs, PlacementFollowsTheHandComputedMemoryModel) {
  // 64^3 preprocessed, patch 32^3: padded 262144 voxels, 3 positions on every axis (ties: axis 0),
  // a slab 32 x 64 x 64 = 131072 voxels. One channel, 3 classes, no resampling (cropped = original).
  CaseSize s;
  s.preprocessed = {64, 64, 64};
  s.cropped = s.original = {64, 64, 64};
  s.channels = 1;
  s.classes = 3;
  s.tile_batch = 1;  // a batch's logits, a flipped copy, the sum: 4*3*32768*(1+2) bytes where the network runs
  const double batch = 1179648.0;
  const WindowShape w = window_shape(s.preprocessed, {32, 32, 32}, 0.5);
  EXPECT_EQ(w.axis, 0);
  EXPECT_EQ(w.slab_voxels(), 131072.0);
  const CaseMemory cpu = case_memory(s, w, false, false, false);  // fp32 accumulators (--accumulators fp32)
  // No padding, so no copy of the image; accumulators 4*4*262144; the division 4*3*262144; the
  // preprocessed case 4*262144.
  EXPECT_EQ(cpu.whole_host, 4194304.0 + 3145728.0 + 1048576.0 + batch);
  // accumulators 4*4*131072; a chunk of 32/32 = 1 slice (4096 voxels) divided and copied 8*3*4096;
  // the preprocessed case
  EXPECT_EQ(cpu.slabs_host, 2097152.0 + 98304.0 + 1048576.0 + batch);
  // planes in double 3*8*3*4096 + segmentation 2*262144 + 4*262144
  EXPECT_EQ(cpu.export_host, 294912.0 + 524288.0 + 1048576.0);
  const CaseMemory cpu16 = case_memory(s, w, false, true, false);  // nnU-Net's fp16 accumulators, the default
  // fp16 accumulators 2*4*262144; the fp16 quotient and its float copy 6*3*262144; the preprocessed case
  EXPECT_EQ(cpu16.whole_host, 2097152.0 + 4718592.0 + 1048576.0 + batch);
  EXPECT_EQ(cpu16.slabs_host, 1048576.0 + 98304.0 + 1048576.0 + batch);
  const CaseMemory gpu = case_memory(s, w, true, true, false);
  // the image on the GPU 4*262144, fp16 accumulators 2*4*262144, the quotient and its float copy 6*3*262144
  EXPECT_EQ(gpu.whole_device, 1048576.0 + 2097152.0 + 4718592.0 + batch);
  EXPECT_EQ(gpu.whole_host, 1048576.0 + 3145728.0);  // the preprocessed case and the finished logits
  EXPECT_EQ(gpu.slabs_device, 1048576.0 + 1048576.0 + 73728.0 + batch);

  PlacementRequest r;
  const double whole = cpu.whole_host + cpu.export_host;
  r.host_free = static_cast<int64_t>(whole / kUsableFraction) + 1;
  Placement p = decide_placement(cpu, r);
  EXPECT_FALSE(p.slabs) << p.why;
  r.host_free -= 2;
  p = decide_placement(cpu, r);
  EXPECT_TRUE(p.slabs) << p.why;
  EXPECT_TRUE(p.on_host);
  EXPECT_NE(p.why.find("in slabs in host memory"), std::string::npos) << p.why;
  r.mode = SlabMode::Never;
  EXPECT_FALSE(decide_placement(cpu, r).slabs);
  r.mode = SlabMode::Auto;
  r.slabs_possible = false;
  EXPECT_FALSE(decide_placement(cpu, r).slabs);

  // A GPU: whole on it, then slabs on it, then slabs in host memory; --not_on_device: host only.
  PlacementRequest g;
  g.cuda = true;
  g.host_free = int64_t{1} << 40;
  g.device_free = static_cast<int64_t>(gpu.whole_device / kUsableFraction) + 1;
  p = decide_placement(gpu, g);
  EXPECT_FALSE(p.slabs);
  EXPECT_FALSE(p.on_host);
  g.device_free -= 2;
  p = decide_placement(gpu, g);
  EXPECT_TRUE(p.slabs);
  EXPECT_FALSE(p.on_host) << p.why;
  g.device_free = static_cast<int64_t>(gpu.slabs_device / kUsableFraction) - 1;
  p = decide_placement(gpu, g);
  EXPECT_TRUE(p.slabs);
  EXPECT_TRUE(p.on_host) << p.why;
  g.not_on_device = true;
  g.device_free = int64_t{1} << 40;
  p = decide_placement(cpu, g);
  EXPECT_FALSE(p.slabs);
  EXPECT_TRUE(p.on_host);

  // After an out-of-memory error: whole -> slabs on the GPU -> slabs on the host -> nothing.
  Placement q;
  EXPECT_TRUE(next_placement(q, true, true));
  EXPECT_TRUE(q.slabs && !q.on_host);
  EXPECT_TRUE(next_placement(q, true, true));
  EXPECT_TRUE(q.slabs && q.on_host);
  EXPECT_FALSE(next_placement(q, true, true));
  Placement c;
  c.on_host = true;
  EXPECT_TRUE(next_placement(c, false, true));
  EXPECT_TRUE(c.slabs && c.on_host);
  Placement none;
  EXPECT_FALSE(next_placement(none, true, false));
  EXPECT_THROW(parse_slab_mode("sometimes"), Error);
}

namespace {

// The allocation limit is process-wide: always lifted again.
struct AllocationLimit {
  explicit AllocationLimit(int64_t bytes) { set_cpu_allocation_limit(bytes); }
  ~AllocationLimit() { set_cpu_allocation_limit(0); }
};

}  // namespace

TEST(PredictionSlabs, AnOutOfMemoryErrorPredictsTheCaseAgainInSlabs) {
  test::TempDir d("slabs_oom");
  test::TinyModelSpec spec;
  spec.labels = {"background", "a", "b"};
  auto net = test::tiny_network(spec, 41);
  test::write_model_folder(d / "model", spec, net, {"0"}, true, {});
  PredictorOptions po;
  po.tile_batch = 1;
  Predictor predictor(load_model_folder(d / "model", {}, "checkpoint_final"), po);

  // A long case, already preprocessed (no crop, no resampling).
  const Shape3 shape{240, 24, 24};
  preprocessing::CaseArrays arrays;
  arrays.channels = 1;
  arrays.shape = shape;
  torch::manual_seed(4);
  const at::Tensor values = torch::randn({shape[0] * shape[1] * shape[2]});
  arrays.data.assign(values.data_ptr<float>(), values.data_ptr<float>() + values.numel());
  const auto props = properties(shape, shape, {1, 1, 1}, {1, 1, 1});
  const ExportOptions eo = predictor.export_defaults();

  // Unlimited, the case is predicted whole; its peak and the slabs' peak, measured.
  install_counting_cpu_allocator();
  int64_t whole_peak = 0, slab_peak = 0;
  Volume whole_seg;
  {
    CpuPeakScope scope;
    const at::Tensor logits = predictor.predict_logits(arrays);
    whole_peak = scope.peak_above_start();
    whole_seg = logits_to_segmentation(logits, props, predictor.labels(), eo);
  }
  {
    CpuPeakScope scope;
    predictor.predict_segmentation_in_slabs(arrays, props, eo, true, nullptr);
    slab_peak = scope.peak_above_start();
  }
  ASSERT_GT(whole_peak, 2 * slab_peak) << "whole " << whole_peak << " B, slabs " << slab_peak << " B";

  // A limit between the two: the whole prediction fails to allocate, the slabs fit.
  const int64_t start = cpu_memory_stats().current_bytes;
  Predictor::CasePrediction r;
  {
    const AllocationLimit limit(start + (whole_peak + slab_peak) / 2);
    EXPECT_FALSE(predictor.placement(arrays, props, eo).slabs) << "the machine's memory holds the whole logits";
    r = predictor.predict_case(arrays, props, eo, "long");
  }
  EXPECT_FALSE(r.logits.defined());
  ASSERT_TRUE(r.seg.has_value());
  ASSERT_EQ(r.seg->numel(), whole_seg.numel());
  EXPECT_TRUE(std::equal(r.seg->data<uint8_t>(), r.seg->data<uint8_t>() + r.seg->numel(), whole_seg.data<uint8_t>()));

  // Below even the slabs' peak, the error is the case's.
  const AllocationLimit tight(start + slab_peak / 4);
  EXPECT_THROW(predictor.predict_case(arrays, props, eo, "long"), std::bad_alloc);
}
