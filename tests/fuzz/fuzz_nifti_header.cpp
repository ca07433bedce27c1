// The NIfTI checks medseg runs before ITK sees a file (io/nifti_header.h, io/nifti_check.h): the
// header decoder on the raw bytes, then the completeness check on the input as a .nii file or,
// when the first byte is odd, gzip-compressed as a .nii.gz (so that the fuzzer need not produce
// valid deflate streams to reach the header logic behind them).
#include "fuzz_util.h"
#include "io/nifti_check.h"
#include "io/nifti_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  fuzz::refuse_or_accept([&] { (void)io::nifti_geometry_problem(io::parse_nifti_header("fuzz.nii", data, size)); });
  if (size < 1) return 0;
  const std::string path = fuzz::write_scratch_nifti(data, size);
  fuzz::refuse_or_accept([&] { (void)io::check_nifti_complete(path); });
  return 0;
}
