#include "io/case_loader.h"

#include "core/error.h"
#include "io/dicom_series.h"
#include "io/image_formats.h"
#include "io/image_io.h"

namespace medseg::io {

std::string grid_mismatch(const Volume& a, const Volume& b) {
  return geometry_mismatch(a.geometry(), a.shape(), b.geometry(), b.shape());
}

namespace {

// NibabelIOWithReorient: every volume to the closest canonical orientation of channel 0's geometry.
void reorient_case(LoadedCase& c) {
  const Reorientation r = ras_reorientation(c.channels[0].geometry());
  c.file_geometry = c.channels[0].geometry();
  c.reorientation = r;
  for (Volume& v : c.channels) v = reorient(v, r);
  if (c.label.numel() > 0) c.label = reorient(c.label, r);
}

}  // namespace

LoadedCase load_case(const CaseFiles& files, bool reorient_to_ras, const std::string& dicom_series_uid) {
  MEDSEG_CHECK(!files.images.empty(), "case '", files.id, "' has no image files");
  LoadedCase c;
  c.id = files.id;
  for (const auto& f : files.images) {
    // A natural image may hold several channels (RGB: io/image_formats.h); other files hold one.
    std::vector<Volume> vs;
    if (!dicom_series_uid.empty() && is_dicom_folder(f))
      vs.push_back(read_dicom_series(f, dicom_series_uid));
    else if (image_family(f) == ImageFamily::Medical)
      vs.push_back(read_image(f));
    else
      vs = read_image_volumes(f);
    for (Volume& v : vs) {
      if (v.pixel_type() != PixelType::Float32) v = Volume::from_float(v.shape(), v.geometry(), v.to_float());
      if (!c.channels.empty()) {
        const std::string why = grid_mismatch(c.channels[0], v);
        MEDSEG_CHECK_FILE(why.empty(), f, "does not share the grid of ", files.images[0], ": ", why);
      }
      c.channels.push_back(std::move(v));
    }
  }
  if (!files.label.empty()) {
    c.label = read_label(files.label);
    const std::string why = grid_mismatch(c.channels[0], c.label);
    MEDSEG_CHECK_FILE(why.empty(), files.label, "does not share the grid of ", files.images[0], ": ", why);
  }
  if (reorient_to_ras) reorient_case(c);
  return c;
}

LoadedCase case_from_volumes(const std::string& id, std::vector<Volume> channels, bool reorient_to_ras) {
  MEDSEG_CHECK(!channels.empty(), "case '", id, "' has no image channels");
  LoadedCase c;
  c.id = id;
  for (std::size_t k = 0; k < channels.size(); ++k) {
    Volume& v = channels[k];
    MEDSEG_CHECK(v.numel() != 0, "case '", id, "': channel ", k, " is empty");
    if (v.pixel_type() != PixelType::Float32) v = Volume::from_float(v.shape(), v.geometry(), v.to_float());
    if (k > 0) {
      const std::string why = grid_mismatch(c.channels[0], v);
      MEDSEG_CHECK(why.empty(), "case '", id, "': channel ", k, " does not share the grid of channel 0: ", why);
    }
    c.channels.push_back(std::move(v));
  }
  if (reorient_to_ras) reorient_case(c);
  return c;
}

}  // namespace medseg::io
