#pragma once
// Process-wide torch settings a run needs: intra-op threads, cuDNN flags, deterministic
// algorithms and the default generators' seed. They are global to the process, so whoever needs
// them holds a ScopedTorchSettings, which applies them and puts back what it found when it ends:
// a trainer in a test, or one rank's trainer, leaves the process as it was for the next one.
#include <cstdint>
#include <memory>
#include <optional>

namespace medseg {

struct TorchSettings {
  int threads = 0;               // intra-op threads; 0 leaves the current count
  bool cudnn_benchmark = false;  // CUDA only; ignored when deterministic
  bool deterministic = false;    // deterministic cuDNN and torch algorithms
  std::optional<uint64_t> seed;  // seeds the default CPU and CUDA generators when set
};

class ScopedTorchSettings {
 public:
  explicit ScopedTorchSettings(const TorchSettings& settings);
  ~ScopedTorchSettings();
  ScopedTorchSettings(const ScopedTorchSettings&) = delete;
  ScopedTorchSettings& operator=(const ScopedTorchSettings&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;  // keeps torch's headers out of this one
};

}  // namespace medseg
