// medseg-app: itk
// medseg_make_dataset: writes a deterministic synthetic dataset in nnU-Net's raw layout.
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/log.h"
#include "core/paths.h"
#include "io/synthetic_dataset.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a deterministic synthetic dataset (nnU-Net raw layout) for demos, tests and benchmarks",
               "medseg_make_dataset"};
  medseg::io::SyntheticDatasetOptions o;
  std::string root;
  bool overwrite = false, anisotropic = false;
  int threads = medseg::cli::default_threads();
  std::vector<int64_t> min_shape, max_shape;
  std::vector<double> spacing;
  app.add_option("-o,--output", root, "Raw root folder (default: $MEDSEG_RAW)");
  app.add_option("-d,--dataset-id", o.dataset_id, "Dataset id (0-999)")->capture_default_str();
  app.add_option("-n,--name", o.name, "Dataset name")->capture_default_str();
  app.add_option("--cases", o.num_cases, "Training cases")->capture_default_str();
  app.add_option("--test-cases", o.num_test_cases, "Extra cases in imagesTs/ with labels in labelsTs/")
      ->capture_default_str();
  app.add_option("--min-shape", min_shape, "Smallest shape z y x")->expected(3);
  app.add_option("--max-shape", max_shape, "Largest shape z y x")->expected(3);
  app.add_option("--spacing", spacing, "Spacing x y z in mm")->expected(3);
  app.add_flag("--anisotropic", anisotropic, "Shortcut for --spacing 0.8 0.8 4 (thick slices)");
  app.add_option("--spacing-jitter", o.spacing_jitter, "Relative per-case spacing jitter")->capture_default_str();
  app.add_option("--channels", o.num_channels, "Channels per case")->capture_default_str();
  app.add_option("--channel-names", o.channel_names, "Channel names (CT selects CT normalization)");
  app.add_option("--labels", o.num_labels, "Foreground classes")->capture_default_str();
  app.add_flag("--ignore-label", o.ignore_label,
               "Partially annotated training labels: an \"ignore\" label (num labels + 1) over the last third of x");
  app.add_flag("--regions", o.regions,
               "Nested regions instead of labels: region1 = [1..L], region2 = [2..L], ... (regions_class_order 1..L)");
  app.add_flag("--random-direction", o.random_direction, "Random (oblique, flipped) direction matrices");
  app.add_flag("--2d", o.two_d, "2D image files (one slice; the z of --min-shape/--max-shape is ignored)");
  app.add_option("--noise", o.noise_std, "Noise standard deviation")->capture_default_str();
  app.add_option("--file-ending", o.file_ending, "File ending")->capture_default_str();
  app.add_option("--seed", o.seed, "Random seed")->capture_default_str();
  app.add_option("--np,--threads", threads, "Writer threads")->capture_default_str();
  app.add_flag("--overwrite", overwrite, "Replace an existing dataset folder");
  return medseg::cli::run(argc, argv, app, [&] {
    if (min_shape.size() == 3) std::copy(min_shape.begin(), min_shape.end(), o.min_shape.begin());
    if (max_shape.size() == 3) std::copy(max_shape.begin(), max_shape.end(), o.max_shape.begin());
    if (min_shape.size() == 3 && max_shape.empty()) o.max_shape = o.min_shape;
    if (anisotropic) o.spacing = {0.8, 0.8, 4.0};
    if (spacing.size() == 3) std::copy(spacing.begin(), spacing.end(), o.spacing.begin());
    const std::string folder =
        medseg::io::write_synthetic_dataset(medseg::root_folder(medseg::Root::Raw, root), o, overwrite, threads);
    spdlog::info("wrote {} training + {} test case(s) to {}", o.num_cases, o.num_test_cases, folder);
    return 0;
  });
}
