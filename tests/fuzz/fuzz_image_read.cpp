// Image read through ITK (io/image_io.h) of a NIfTI file, as medseg reads every image and label:
// medseg's checks first, then ITK. The first byte picks .nii or gzip-compressed .nii.gz, and
// image or label read. ITK itself is not instrumented; what matters is that nothing hostile gets
// past medseg's checks into an ITK crash, abort or huge allocation.
#include "fuzz_util.h"
#include "io/image_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  if (size < 1) return 0;
  const bool label = data[0] & 2;
  const std::string path = fuzz::write_scratch_nifti(data, size);
  fuzz::refuse_or_accept([&] { (void)(label ? io::read_label(path) : io::read_image(path)); });
  return 0;
}
