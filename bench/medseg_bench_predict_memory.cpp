// medseg_bench_predict_memory: peak host memory of predicting one large case, whole or in slabs
// (docs/predict.md, "Large volumes"). The case is synthetic: one channel of --shape voxels, already at
// the configuration's spacing (no resampling, no crop: the most memory a case of that size can take),
// --classes outputs from a 1x1x1 convolution (the network's own memory is the forward check's part, not
// this one's), the sliding window with --patch and the gaussian, then the export to a segmentation.
// Prints the counting allocator's peak (torch's allocations), the process's peak resident size
// (VmHWM: everything), the memory model's figure (inference/placement.h) and the seconds taken, as
// one JSON line. Run each mode in its own process: VmHWM only grows. scripts/bench/bench_predict_memory.sh
// runs it.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli_common.h"
#include "core/error.h"
#include "core_torch/torch_memory.h"
#include "inference/export.h"
#include "inference/placement.h"
#include "inference/slab_export.h"
#include "inference/sliding_window.h"

using namespace medseg;
using namespace medseg::inference;

namespace {

int64_t vm_hwm_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

preprocessing::CaseProperties properties(const Shape3& shape) {
  preprocessing::CaseProperties p;
  p.original_shape = p.shape_before_cropping = p.shape_after_cropping_and_before_resampling = p.shape_after_resampling =
      shape;
  p.bbox_used_for_cropping.lo = {0, 0, 0};
  p.bbox_used_for_cropping.hi = shape;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Peak host memory of predicting one large case, whole or in slabs", "medseg_bench_predict_memory"};
  std::vector<int64_t> shape{1000, 512, 512}, patch{128, 128, 128};
  int64_t classes = 100;
  int threads = 2;
  int64_t tile_batch = 1;
  std::string mode = "slabs";
  app.add_option("--shape", shape, "the case's (z, y, x) voxels")->expected(3);
  app.add_option("--patch", patch, "the plan's patch")->expected(3);
  app.add_option("--classes", classes, "network outputs (labels, background included)");
  app.add_option("--mode", mode, "slabs or whole")->check(CLI::IsMember({"slabs", "whole"}));
  app.add_option("--tile_batch", tile_batch, "tiles per forward pass (medseg_predict --tile_batch)");
  app.add_option("--threads", threads, "torch intra-op threads and export threads");
  return cli::run(argc, argv, app, [&] {
    at::set_num_threads(threads);
    c10::InferenceMode guard;
    install_counting_cpu_allocator();
    const int64_t hwm_start = vm_hwm_bytes();  // the program and its libraries
    const Shape3 s{shape[0], shape[1], shape[2]};
    const preprocessing::CaseProperties props = properties(s);
    const at::Tensor image = at::rand({1, s[0], s[1], s[2]});
    torch::manual_seed(0);
    torch::nn::Conv3d conv(torch::nn::Conv3dOptions(1, classes, 1));
    const NetworkFn net = [&](const at::Tensor& x) { return conv->forward(x); };
    SlidingWindowOptions o;
    o.patch_size = patch;
    o.max_batch = tile_batch;
    LabelMapping labels;
    for (int64_t k = 0; k < classes; ++k) labels.values.push_back(static_cast<int>(k));
    ExportOptions eo;
    eo.threads = threads;
    eo.half_logits = o.half_accumulators;

    const int64_t before = cpu_memory_stats().current_bytes;
    reset_cpu_peak();
    const auto t0 = std::chrono::steady_clock::now();
    Volume seg;
    if (mode == "whole") {
      const at::Tensor logits = predict_sliding_window(net, image, classes, o);
      seg = logits_to_segmentation(logits, props, labels, eo);
    } else {
      const SlidingWindow window(image, classes, o);
      SlabExport slabs(props, labels, eo, window.axis(), false);
      window.stream(net, [&](int64_t begin, const at::Tensor& l) { slabs.add(begin, l); });
      seg = slabs.finish();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t labelled = 0;
    for (int64_t i = 0; i < seg.numel(); ++i) labelled += seg.data<uint8_t>()[i] != 0;

    CaseSize size;
    size.preprocessed = shape;
    size.cropped = size.original = s;
    size.classes = classes;
    size.tile_batch = o.max_batch;
    const CaseMemory model = case_memory(size, window_shape(shape, patch, 0.5), false, o.half_accumulators, false);
    const double modelled = (mode == "whole" ? model.whole_host : model.slabs_host) + model.export_host;
    std::printf(
        "{\"mode\": \"%s\", \"shape\": [%lld, %lld, %lld], \"classes\": %lld, \"patch\": [%lld, %lld, %lld], "
        "\"torch_peak_gib\": %.2f, \"vm_hwm_gib\": %.2f, \"resident_gib\": %.2f, \"model_gib\": %.2f, \"seconds\": "
        "%.1f, \"labelled_voxels\": %lld}\n",
        mode.c_str(), static_cast<long long>(s[0]), static_cast<long long>(s[1]), static_cast<long long>(s[2]),
        static_cast<long long>(classes), static_cast<long long>(patch[0]), static_cast<long long>(patch[1]),
        static_cast<long long>(patch[2]), static_cast<double>(cpu_memory_stats().peak_bytes - before) / 1073741824.0,
        static_cast<double>(vm_hwm_bytes()) / 1073741824.0,
        static_cast<double>(vm_hwm_bytes() - hwm_start) / 1073741824.0, modelled / 1073741824.0, seconds,
        static_cast<long long>(labelled));
    return 0;
  });
}
