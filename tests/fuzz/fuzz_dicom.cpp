// A DICOM file read as medseg reads a series (io/dicom_series.h): DCMTK parses and decodes, medseg checks
// the header values and the pixel data's length before it trusts them. The input is the one file of a
// series folder; the seeds are slices GDCM wrote (tests/support/dicom_writer.h).
#include <filesystem>

#include "fuzz_util.h"
#include "io/dicom_series.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace medseg;
  static const std::string folder = [] {
    const std::string f = fuzz::scratch_dir() + "/series";
    std::filesystem::create_directories(f);
    return f;
  }();
  const std::string path = folder + "/slice.dcm";
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  fuzz::refuse_or_accept([&] { (void)io::read_dicom_series(folder); });
  return 0;
}
