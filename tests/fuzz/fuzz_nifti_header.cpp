// The NIfTI checks medseg runs before ITK sees a file (io/nifti_header.h, io/nifti_check.h): the
// header decoder on the raw bytes, then the completeness check on the input as a .nii file or,
// when the first byte is odd, gzip-compressed as a .nii.gz (so that the fuzzer need not produce
// valid deflate streams to reach the header logic behind them).
#include <zlib.h>

#include "fuzz_util.h"
#include "io/nifti_check.h"
#include "io/nifti_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  fuzz::refuse_or_accept([&] { (void)io::nifti_geometry_problem(io::parse_nifti_header("fuzz.nii", data, size)); });
  if (size < 1) return 0;
  const bool gz = data[0] & 1;
  std::string path;
  if (gz) {
    path = fuzz::scratch_dir() + "/image.nii.gz";
    gzFile f = gzopen(path.c_str(), "wb1");
    if (size > 1) gzwrite(f, data + 1, static_cast<unsigned>(size - 1));
    gzclose(f);
  } else {
    path = fuzz::write_scratch("image.nii", data + 1, size - 1);
  }
  fuzz::refuse_or_accept([&] { (void)io::check_nifti_complete(path); });
  return 0;
}
