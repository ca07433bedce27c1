// The case store's .npy reader (preprocessing/npy.h, case_store.h): the header parser on the raw
// bytes, then open_preprocessed_case with the input as CASE.npy or CASE_seg.npy beside valid
// companions, and a read of the whole case so that a header promising more than the file holds
// shows up as an out-of-bounds read.
#include <vector>

#include "core/json_io.h"
#include "fuzz_util.h"
#include "preprocessing/case_store.h"
#include "preprocessing/npy.h"

namespace {

using namespace medseg;
using namespace medseg::preprocessing;

constexpr int64_t kZ = 2, kY = 3, kX = 4;

// CASE.json and a valid CASE.npy / CASE_seg.npy of shape (1, 2, 3, 4), written once.
void write_companions() {
  static const bool done = [] {
    CaseProperties p;
    p.id = "case";
    p.original_shape = p.shape_before_cropping = p.shape_after_cropping_and_before_resampling = {kZ, kY, kX};
    p.shape_after_resampling = {kZ, kY, kX};
    p.bbox_used_for_cropping.hi = {kZ, kY, kX};
    CaseArrays a;
    a.channels = 1;
    a.shape = {kZ, kY, kX};
    a.data.assign(kZ * kY * kX, 1.0f);
    a.seg.assign(kZ * kY * kX, 1);
    write_preprocessed_case(fuzz::scratch_dir() + "/valid", p, a, false);
    write_json(fuzz::scratch_dir() + "/case.json", case_properties_to_json(p));
    return true;
  }();
  (void)done;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  write_companions();
  fuzz::refuse_or_accept([&] { (void)parse_npy_header(reinterpret_cast<const char*>(data), size, "fuzz.npy"); });
  if (size < 1) return 0;
  // First byte: which of the two arrays the rest of the input replaces.
  const bool as_seg = data[0] & 1;
  const std::string dir = fuzz::scratch_dir();
  const std::string valid = dir + "/valid/case";
  std::filesystem::copy_file(valid + (as_seg ? ".npy" : "_seg.npy"), dir + (as_seg ? "/case.npy" : "/case_seg.npy"),
                             std::filesystem::copy_options::overwrite_existing);
  fuzz::write_scratch(as_seg ? "case_seg.npy" : "case.npy", data + 1, size - 1);
  fuzz::refuse_or_accept([&] {
    const PreprocessedCase c = open_preprocessed_case(dir, "case");
    Box all;
    all.hi = c.shape();
    std::vector<float> img(static_cast<std::size_t>(c.num_channels() * all.numel()));
    std::vector<int16_t> seg(static_cast<std::size_t>(all.numel()));
    read_patch(c, all, img.data());
    read_seg_patch(c, all, seg.data());
  });
  return 0;
}
