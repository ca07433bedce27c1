// medseg-app: itk
// medseg_bench_patch_reads: random patch reads per second from a preprocessed folder (read_patch +
// read_seg_patch on the mmapped .npy store), against decoding the whole raw .nii.gz case and
// cropping the patch from it. Used by scripts/bench/bench_preprocess.sh.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "cli_common.h"
#include "core/error.h"
#include "io/image_io.h"
#include "preprocessing/case_store.h"

namespace fs = std::filesystem;
using namespace medseg;
using namespace medseg::preprocessing;

namespace {

// nnU-Net-like placement: the patch centre anywhere in the volume, so patches may stick out.
Box random_box(const Shape3& shape, const std::vector<int64_t>& patch, std::mt19937_64& rng) {
  Box b;
  for (int a = 0; a < 3; ++a) {
    b.lo[a] = static_cast<int64_t>(rng() % static_cast<uint64_t>(shape[a])) - patch[a] / 2;
    b.hi[a] = b.lo[a] + patch[a];
  }
  return b;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark random patch reads: preprocessed store vs whole .nii.gz decode", "medseg_bench_patch_reads"};
  std::string folder, raw;
  std::vector<int64_t> patch{64, 64, 64};
  int reads = 2000, raw_reads = 20;
  uint64_t seed = 1;
  app.add_option("--folder", folder, "Preprocessed folder (<data_identifier>/)")->required();
  app.add_option("--raw", raw, "Raw dataset folder (DatasetXXX_Name) for the .nii.gz comparison");
  app.add_option("--patch", patch, "Patch size z y x")->expected(3);
  app.add_option("--reads", reads, "Patch reads from the store")->capture_default_str();
  app.add_option("--raw-reads", raw_reads, "Patch reads by full .nii.gz decode")->capture_default_str();
  app.add_option("--seed", seed, "Random seed")->capture_default_str();
  return cli::run(argc, argv, app, [&] {
    const auto ids = list_preprocessed_cases(folder);
    if (ids.empty()) throw Error(folder + ": no preprocessed cases");
    std::vector<PreprocessedCase> cases;
    for (const auto& id : ids) cases.push_back(open_preprocessed_case(folder, id));
    std::mt19937_64 rng(seed);
    const int64_t n = patch[0] * patch[1] * patch[2];
    std::vector<float> data(static_cast<std::size_t>(n * cases[0].num_channels()));
    std::vector<int16_t> seg(static_cast<std::size_t>(n));
    double checksum = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reads; ++i) {
      const PreprocessedCase& c = cases[rng() % cases.size()];
      const Box b = random_box(c.shape(), patch, rng);
      read_patch(c, b, data.data());
      read_seg_patch(c, b, seg.data());
      checksum += data[static_cast<std::size_t>(n / 2)] + seg[static_cast<std::size_t>(n / 2)];
    }
    const double store_s = seconds_since(t0);
    std::printf("store: %d patches %lldx%lldx%lld in %.3f s = %.0f patches/s (checksum %.3g)\n", reads,
                (long long)patch[0], (long long)patch[1], (long long)patch[2], store_s, reads / store_s, checksum);
    if (raw.empty() || raw_reads <= 0) return 0;
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < raw_reads; ++i) {
      const std::string& id = ids[rng() % ids.size()];
      const Volume img = io::read_image((fs::path(raw) / "imagesTr" / (id + "_0000.nii.gz")).string());
      const Volume lab = io::read_label((fs::path(raw) / "labelsTr" / (id + ".nii.gz")).string());
      const Box b = random_box(img.shape(), patch, rng);
      checksum += img.at(std::clamp<int64_t>(b.lo[0], 0, img.shape()[0] - 1), 0, 0) + lab.at(0, 0, 0);
    }
    const double raw_s = seconds_since(t0);
    std::printf("nii.gz: %d full decodes (image + label) in %.3f s = %.1f patches/s\n", raw_reads, raw_s,
                raw_reads / raw_s);
    std::printf("speed-up: %.0fx\n", (reads / store_s) / (raw_reads / raw_s));
    return 0;
  });
}
