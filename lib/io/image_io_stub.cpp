// Image IO when the build has no ITK (MEDSEG_WITH_ITK=OFF): every call explains why it fails.
#ifndef MEDSEG_WITH_ITK
#include <cmath>

#include "core/error.h"
#include "io/image_formats.h"
#include "io/image_io.h"

namespace medseg::io {

static Error no_itk(const std::string& path) {
  return FileError(path, "this medseg build has no image IO (configured with -DMEDSEG_WITH_ITK=OFF)");
}

bool image_io_available() { return false; }
Volume read_image(const std::string& path) { throw no_itk(path); }
std::vector<Volume> read_image_volumes(const std::string& path) { throw no_itk(path); }
Volume read_label(const std::string& path) { throw no_itk(path); }
void write_image(const std::string& path, const Volume&) { throw no_itk(path); }
int image_file_channels(const std::string& path) { throw no_itk(path); }
std::array<int64_t, 3> image_file_shape(const std::string& path) { throw no_itk(path); }

}  // namespace medseg::io
#endif
