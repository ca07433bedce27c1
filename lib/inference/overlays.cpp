#include "inference/overlays.h"

#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/log.h"
#include "core/strings.h"
#include "io/image_io.h"
#include "visualization/overlay.h"

namespace fs = std::filesystem;

namespace medseg::inference {

std::string overlay_file(const std::string& folder, const std::string& id) {
  return (fs::path(folder) / "overlays" / (id + ".png")).string();
}

void create_overlay_folder(const std::string& folder) {
  MEDSEG_CHECK(visualization::overlays_available(),
               "--overlays: this build of medseg has no cairo (MEDSEG_WITH_CAIRO=OFF) and cannot draw them");
  const fs::path dir = fs::path(folder) / "overlays";
  std::error_code ec;
  fs::create_directories(dir, ec);
  MEDSEG_CHECK_FILE(!ec && fs::is_directory(dir), dir.string(), "cannot create the overlays folder (",
                    (ec ? ec.message() : "not a folder"), ")");
}

void write_prediction_overlay(const std::string& image_file, const Volume& segmentation, const io::DatasetInfo& dataset,
                              const std::string& folder, const std::string& id) {
  // An RGB image (one file, three channels: io/image_formats.h) is drawn from its first channel.
  const Volume image = std::move(io::read_image_volumes(image_file).at(0));
  visualization::OverlayInput in;
  in.image = &image;
  in.segmentation = &segmentation;
  in.legend = visualization::legend_from_dataset(dataset);
  in.title = id;
  visualization::write_overlay(overlay_file(folder, id), in);
}

void write_validation_overlay(const preprocessing::PreprocessedCase& c, const Volume& segmentation,
                              const std::string& reference_file, const io::DatasetInfo& dataset,
                              const ExportOptions& opts, const std::string& folder) {
  if (!visualization::overlays_available()) return;  // a build without cairo: validation draws nothing
  try {
    const Volume image = channel_to_original(c.data(), c.properties(), opts);
    Volume reference;
    visualization::OverlayInput in;
    in.image = &image;
    in.segmentation = &segmentation;
    try {
      reference = io::read_label(reference_file);
      in.reference = &reference;
    } catch (const std::exception& e) {
      spdlog::warn("overlay of '{}' without its reference: {}", c.id(), one_line(e.what()));
    }
    in.legend = visualization::legend_from_dataset(dataset);
    in.title = c.id() + " (validation)";
    visualization::write_overlay(overlay_file(folder, c.id()), in);
  } catch (const std::exception& e) {
    spdlog::warn("no overlay for validation case '{}': {}", c.id(), one_line(e.what()));
  }
}

}  // namespace medseg::inference
