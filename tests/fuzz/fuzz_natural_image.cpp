// 2D natural images (PNG, BMP) read as medseg reads them: its raw-byte checks (io/natural_check.h), then
// ITK with libpng. libpng aborts the process on data it cannot decode and ITK allocates what a header
// declares, so anything the checks let through must decode; the first byte picks .png (even) or .bmp (odd).
#include "fuzz_util.h"
#include "io/image_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  if (size < 1) return 0;
  const std::string path = fuzz::write_scratch((data[0] & 1) ? "image.bmp" : "image.png", data + 1, size - 1);
  fuzz::refuse_or_accept([&] { (void)io::read_image_volumes(path); });
  return 0;
}
