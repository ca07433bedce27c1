// Image read through ITK (io/image_io.h) of a NIfTI file, as medseg reads every image and label:
// medseg's checks first, then ITK. The first byte picks .nii or gzip-compressed .nii.gz, and
// image or label read. ITK itself is not instrumented; what matters is that nothing hostile gets
// past medseg's checks into an ITK crash, abort or huge allocation.
#include <zlib.h>

#include "fuzz_util.h"
#include "io/image_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  if (size < 1) return 0;
  const bool gz = data[0] & 1, label = data[0] & 2;
  std::string path;
  if (gz) {
    path = fuzz::scratch_dir() + "/image.nii.gz";
    gzFile f = gzopen(path.c_str(), "wb1");
    if (size > 1) gzwrite(f, data + 1, static_cast<unsigned>(size - 1));
    gzclose(f);
  } else {
    path = fuzz::write_scratch("image.nii", data + 1, size - 1);
  }
  fuzz::refuse_or_accept([&] { (void)(label ? io::read_label(path) : io::read_image(path)); });
  return 0;
}
