// medseg-app: itk
// medseg_ensemble: averages the saved probabilities of several prediction folders and writes the
// segmentations, as nnUNetv2_ensemble (docs/model_selection.md).
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/json_io.h"
#include "io/dataset.h"
#include "selection/ensemble.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App app{"Ensemble prediction folders by averaging their saved probabilities", "medseg_ensemble"};
  medseg::selection::EnsembleOptions o;
  o.threads = medseg::cli::default_threads();
  app.add_option(
         "-i,--input", o.inputs,
         "Two or more folders with CASE_probabilities.npy/.json, or nnU-Net's CASE.npz beside CASE<file_ending>")
      ->required();
  app.add_option("-o,--output", o.output, "Output folder")->required();
  app.add_option("--np", o.threads, "Threads")->capture_default_str();
  app.add_flag("--save_npz,--save_probabilities", o.save_probabilities, "Also write the averaged probabilities");
  return medseg::cli::run(argc, argv, app, [&] {
    // The file ending of the written segmentations: the first folder's dataset.json, as nnU-Net.
    const fs::path dj = fs::path(o.inputs.empty() ? "" : o.inputs[0]) / "dataset.json";
    // It names the written files: checked like every name that becomes part of a path.
    if (fs::exists(dj)) o.file_ending = medseg::io::file_ending_from_json(medseg::read_json(dj.string()), dj.string());
    const int64_t n = medseg::selection::ensemble_folders(o);
    std::printf("%lld case(s) ensembled from %zu folders -> %s\n", static_cast<long long>(n), o.inputs.size(),
                o.output.c_str());
    return 0;
  });
}
