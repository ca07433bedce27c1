#pragma once
// Where a case's logits accumulate, decided before the case starts from the memory model below, the
// case's size, the number of classes and the memory free (docs/predict.md, "Large volumes"):
//   whole   the logits of the whole image accumulate at once (on the GPU in fp16, or in host memory),
//           then the export resamples them;
//   slabs   the sliding window runs one row of tile positions at a time along its outermost axis and
//           hands each finished slab to the export (inference/slab_export.h): only a patch-thick
//           accumulator exists, whatever the image's length.
// On a GPU: whole on the device when it fits, else slabs on the device, else slabs in host memory.
// On the CPU (or --not_on_device): whole when it fits host memory, else slabs. Both give the same
// segmentation bit for bit. An out-of-memory error during a case retries it one step further down.
#include <cstdint>
#include <string>
#include <vector>

#include "inference/sliding_window.h"
#include "preprocessing/case_store.h"

namespace medseg::inference {

// medseg_predict --slabs: auto (decide per case), always, never.
enum class SlabMode { Auto, Always, Never };
// Throws Error naming the flag for anything but auto, always or never.
SlabMode parse_slab_mode(const std::string& value);

// Bytes each way of predicting one case needs (the memory model of docs/predict.md). Where the network
// runs (the GPU, or the host for the CPU) each figure includes the batch's logits and their sums; the
// network's own activations are the forward check's part (planning/memory_check.h).
struct CaseMemory {
  double whole_device = 0;  // GPU: padded image, accumulators, the finished logits in fp32
  double whole_host = 0;    // host: the same (CPU, --not_on_device), or the finished logits (GPU)
  double slabs_device = 0;  // GPU: padded image, one patch-thick accumulator and its finished part
  double slabs_host = 0;    // host: the same on the host (the image too)
  double export_host = 0;   // segmentation buffers, in-plane slices, and with probabilities every class
};

struct CaseSize {
  std::vector<int64_t> preprocessed;  // spatial shape the network sees
  Shape3 cropped{}, original{};       // the export's grid and the file's
  int64_t channels = 1, classes = 2;
  int64_t tile_batch = 8;  // tiles x mirrored copies per forward pass (--tile_batch)
};

// on_device: the accumulators live in GPU memory; half: they are fp16 (nnU-Net's, on every device).
CaseMemory case_memory(const CaseSize& size, const WindowShape& window, bool on_device, bool half_accumulators,
                       bool probabilities);

struct PlacementRequest {
  bool cuda = false;
  bool not_on_device = false;  // accumulate in host memory (nnU-Net's perform_everything_on_device=False)
  SlabMode mode = SlabMode::Auto;
  bool slabs_possible = true;  // false for spline export orders and sharded prediction
  int64_t device_free = 0;     // bytes; 0 = unknown (no limit)
  int64_t host_free = 0;
};

struct Placement {
  bool slabs = false;
  bool on_host = false;  // accumulators in host memory (the CPU device always)
  std::string why;       // the decision in words, for the log
};

// The fraction of the free memory a case may plan to use; the rest is the network's and other cases'.
constexpr double kUsableFraction = 0.8;

Placement decide_placement(const CaseMemory& memory, const PlacementRequest& request);

// The next way down after an out-of-memory error: whole -> slabs on the device -> slabs on the host.
// False when there is none.
bool next_placement(Placement& p, bool cuda, bool slabs_possible);

std::string gib(double bytes);  // "12.3 GiB"

}  // namespace medseg::inference
