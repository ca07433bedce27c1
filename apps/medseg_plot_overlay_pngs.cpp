// medseg_plot_overlay_pngs: nnUNetv2_plot_overlay_pngs. For every training case, the slice with the most
// foreground drawn with its labels tinted, from the preprocessed data (default) or the raw images
// (--use_raw); docs/file_formats.md's companion for looking at a dataset (visualization/slice_overlay.h).
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/output_folder.h"
#include "core/path_overlap.h"
#include "core/parallel.h"
#include "core/paths.h"
#include "core/progress.h"
#include "io/case_loader.h"
#include "io/dataset.h"
#include "plans/plans.h"
#include "preprocessing/case_store.h"
#include "visualization/slice_overlay.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

struct Options {
  std::string dataset, output, plans = "nnUNetPlans", configuration;
  int threads = 1, channel = 0;
  bool use_raw = false;
  double intensity = 0.6;
};

// One picture: slice choice, tinting and the file, from a (C, Z, Y, X) image channel and a (Z, Y, X) label map.
void plot(const float* image, std::vector<int> seg, int64_t nz, int64_t ny, int64_t nx, double intensity,
          const std::string& file) {
  for (int& v : seg) v = std::max(v, 0);  // nnU-Net's -1 (outside the crop) draws as background
  const int64_t z = visualization::select_overlay_slice(seg, nz, ny * nx);
  const auto rgb = visualization::overlay_rgb(image + z * ny * nx, seg.data() + z * ny * nx, ny, nx, intensity);
  visualization::write_rgb_png(file, rgb, ny, nx);
}

int64_t from_preprocessed(const Options& o, const std::string& name) {
  const fs::path folder = fs::path(root_folder(Root::Preprocessed)) / name;
  const planning::Plans plans = planning::load_plans((folder / (o.plans + ".json")).string());
  const std::string cfg = !o.configuration.empty()                ? o.configuration
                          : plans.has_configuration("3d_fullres") ? "3d_fullres"
                                                                  : "2d";
  const fs::path data = folder / plans.configuration(cfg).data_identifier;
  if (!fs::is_directory(data))
    throw FileError(data.string(), "preprocessed data of configuration '" + cfg +
                                       "' not found; run medseg_preprocess -d " + o.dataset + " -c " + cfg + " first");
  const std::vector<std::string> ids = preprocessing::list_preprocessed_cases(data.string());
  ProgressBar bar("overlays", static_cast<int64_t>(ids.size()));
  parallel_for(static_cast<int64_t>(ids.size()), o.threads, [&](int64_t i) {
    const auto c = preprocessing::open_preprocessed_case(data.string(), ids[static_cast<size_t>(i)]);
    MEDSEG_CHECK(o.channel < c.num_channels(), "-channel_idx ", o.channel, ": this dataset has channels 0..",
                 c.num_channels() - 1);
    const auto& s = c.shape();
    std::vector<int16_t> stored(static_cast<size_t>(c.voxels()));
    preprocessing::read_seg_patch(c, Box{{0, 0, 0}, s}, stored.data());  // the whole case, int8 or int16 as stored
    plot(c.channel(o.channel), std::vector<int>(stored.begin(), stored.end()), s[0], s[1], s[2], o.intensity,
         (fs::path(o.output) / (c.id() + ".png")).string());
    bar.tick();
  });
  bar.finish();
  return static_cast<int64_t>(ids.size());
}

int64_t from_raw(const Options& o, const std::string& name) {
  const io::DatasetInfo ds = io::load_dataset_info((fs::path(root_folder(Root::Raw)) / name).string());
  MEDSEG_CHECK(o.channel < ds.num_channels(), "-channel_idx ", o.channel, ": ", name, " has channels 0..",
               ds.num_channels() - 1);
  const std::vector<io::CaseFiles> cases = io::list_training_cases(ds);
  ProgressBar bar("overlays", static_cast<int64_t>(cases.size()));
  parallel_for(static_cast<int64_t>(cases.size()), o.threads, [&](int64_t i) {
    const io::LoadedCase c = io::load_case(cases[static_cast<size_t>(i)]);
    const Volume& image = c.channels.at(static_cast<size_t>(o.channel));
    const auto& s = image.shape();
    std::vector<int> seg(static_cast<size_t>(c.label.numel()));
    const std::vector<float> labels = c.label.to_float();
    for (size_t k = 0; k < seg.size(); ++k) seg[k] = static_cast<int>(labels[k]);
    plot(image.data<float>(), std::move(seg), s[0], s[1], s[2], o.intensity,
         (fs::path(o.output) / (c.id + ".png")).string());
    bar.tick();
  });
  bar.finish();
  return static_cast<int64_t>(cases.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Plot PNG overlays of the slice with the most foreground of every training case "
      "(nnUNetv2_plot_overlay_pngs; spacing is not taken into account)",
      "medseg_plot_overlay_pngs"};
  Options o;
  o.threads = cli::default_threads();
  app.add_option("-d", o.dataset, "Dataset name or id")->required();
  app.add_option("-o", o.output, "Output folder")->required();
  app.add_option("--np", o.threads, "Cases drawn in parallel")->capture_default_str();
  app.add_option("--channel_idx", o.channel, "Channel drawn (0 = _0000)")->capture_default_str();
  app.add_flag("--use_raw", o.use_raw, "Draw the raw images and labels instead of the preprocessed data");
  app.add_option("-p", o.plans, "Plans identifier (preprocessed data only)")->capture_default_str();
  app.add_option("-c", o.configuration,
                 "Configuration (preprocessed data only; default 3d_fullres if planned, else 2d)");
  app.add_option("--overlay_intensity", o.intensity, "Label tint: higher is brighter")->capture_default_str();
  return cli::run(argc, argv, app, [&] {
    if (o.channel < 0) throw Error("-channel_idx must be >= 0");
    if (!(o.intensity >= 0)) throw Error("-overlay_intensity must be >= 0");
    const std::string root = root_folder(o.use_raw ? Root::Raw : Root::Preprocessed);
    const std::string name = find_dataset_name(root, o.dataset);
    // The pictures are named CASE.png: inside a PNG dataset's labelsTr they would replace its labels.
    check_output_apart(o.output, (fs::path(root) / name).string(), "dataset folder drawn");
    NewFolderGuard out(o.output);
    const int64_t n = o.use_raw ? from_raw(o, name) : from_preprocessed(o, name);
    out.keep();
    std::printf("%lld overlay(s) -> %s\n", static_cast<long long>(n), o.output.c_str());
    return 0;
  });
}
