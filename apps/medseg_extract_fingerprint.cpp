// medseg-app: itk
// medseg_extract_fingerprint: nnUNetv2_extract_fingerprint's job. Writes dataset_fingerprint.json
// (nnU-Net's format, docs/fingerprint.md) into MEDSEG_PREPROCESSED/DatasetXXX_Name/.
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/log.h"
#include "core/path_overlap.h"
#include "core/paths.h"
#include "fingerprint/extractor.h"
#include "io/dataset.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

void verify_or_throw(const io::DatasetInfo& info, int threads) {
  const auto problems = io::verify_dataset(info, threads);
  if (problems.size() == 1) throw Error("dataset integrity check: " + problems.front());
  for (const auto& p : problems) spdlog::error("{}", p);
  MEDSEG_CHECK(problems.empty(), info.folder, ": dataset integrity check found ", problems.size(),
               " problems (listed above)");
  spdlog::info("dataset integrity check passed");
}

void print_summary(const fingerprint::DatasetFingerprint& fp, const std::string& path) {
  std::printf("%s: %zu case(s), median relative size after cropping %.4f\n", path.c_str(), fp.spacings.size(),
              fp.median_relative_size_after_cropping);
  for (int c = 0; c < fp.num_channels(); ++c) {
    const auto& s = fp.intensity_per_channel[c];
    std::printf("  channel %d: mean %.6g std %.6g median %.6g [p0.5 %.6g, p99.5 %.6g] min %.6g max %.6g\n", c, s.mean,
                s.std, s.median, s.percentile_00_5, s.percentile_99_5, s.min, s.max);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Extract a dataset fingerprint (nnU-Net v2's dataset_fingerprint.json)", "medseg_extract_fingerprint"};
  std::string id, raw_folder, output;
  fingerprint::ExtractOptions o;
  o.threads = cli::default_threads();
  bool clean = false, verify = false, no_progress = false;
  app.add_option("-d", id, "Dataset id or name under $MEDSEG_RAW");
  app.add_option("--raw-folder", raw_folder, "Dataset folder (DatasetXXX_Name) instead of -d; needs -o");
  app.add_option("-o,--output", output,
                 "Output JSON (default: $MEDSEG_PREPROCESSED/DatasetXXX_Name/dataset_fingerprint.json)");
  app.add_option("--np", o.threads, "Cases analysed in parallel")->capture_default_str();
  app.add_flag("--clean", clean, "Recompute even if the fingerprint exists");
  app.add_flag("--verify_dataset_integrity", verify, "Run the dataset integrity check first");
  app.add_flag("--exact-stats", o.exact_stats, "Statistics over all foreground voxels instead of samples");
  app.add_option("--max-samples-total", o.max_samples_total,
                 "Foreground samples per channel over the whole dataset (nnU-Net: 10e7)")
      ->capture_default_str();
  app.add_flag("--no-progress", no_progress, "No progress bar");
  return cli::run(argc, argv, app, [&] {
    if (id.empty() == raw_folder.empty()) throw Error("give exactly one of -d DATASET or --raw-folder DIR");
    if (o.threads < 1) throw Error("--np must be at least 1");
    if (o.max_samples_total < 1) throw Error("--max-samples-total must be at least 1");
    std::string folder = raw_folder;
    if (!id.empty()) {
      const std::string root = root_folder(Root::Raw);
      const std::string name = find_dataset_name(root, id);
      folder = (fs::path(root) / name).string();
      if (output.empty())
        output = (fs::path(root_folder(Root::Preprocessed)) / name / "dataset_fingerprint.json").string();
    }
    if (output.empty()) throw Error("--raw-folder needs -o FILE");
    check_output_apart(output, folder, "dataset folder");  // -o .../dataset.json replaced it
    if (fs::exists(output) && !clean) {
      spdlog::info("fingerprint exists, kept (use --clean to recompute): {}", output);
      print_summary(fingerprint::load_fingerprint(output), output);
      return 0;
    }
    const io::DatasetInfo info = io::load_dataset_info(folder);
    if (verify) verify_or_throw(info, o.threads);
    const auto cases = io::list_training_cases(info);
    spdlog::info("{}: {} case(s), {} channel(s), {} thread(s){}", info.name, cases.size(), info.num_channels(),
                 o.threads, o.exact_stats ? ", exact statistics" : "");
    o.progress = !no_progress;
    o.label_values = info.label_values();
    o.reorient_to_ras = info.reorient_to_ras;
    const auto fp = fingerprint::extract_fingerprint(cases, info.num_channels(), o);
    fingerprint::save_fingerprint(output, fp);
    print_summary(fp, output);
    return 0;
  });
}
