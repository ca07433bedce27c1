#include "preprocessing/npz.h"

#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/zip_archive.h"
#include "preprocessing/npy.h"

namespace medseg::preprocessing {

void write_npz_float32(const std::string& path, const std::string& key, const std::vector<int64_t>& shape,
                       const float* data) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::string bytes = npy_header("<f4", shape);
  const size_t header = bytes.size();
  bytes.resize(header + static_cast<size_t>(n) * sizeof(float));
  std::memcpy(bytes.data() + header, data, static_cast<size_t>(n) * sizeof(float));
  ZipWriter zip(path, true);
  zip.add_bytes(key + ".npy", std::move(bytes));
  zip.commit();
}

std::vector<float> read_npz_float32(const std::string& path, const std::string& key, std::vector<int64_t>& shape) {
  const ZipReader zip(path);
  const std::string name = key + ".npy";
  for (const ZipEntry& e : zip.entries()) {
    if (e.name != name) continue;
    const std::string bytes = zip.read(e, std::numeric_limits<uint64_t>::max());
    const NpyHeader h = parse_npy_header(bytes.data(), bytes.size(), path + ":" + name);
    MEDSEG_CHECK_FILE(h.descr == "<f4" && !h.fortran_order, path, "array '", key, "' is ", h.descr,
                      h.fortran_order ? " in Fortran order" : "", "; expected little-endian float32 in C order");
    const size_t want = static_cast<size_t>(h.numel()) * sizeof(float);
    MEDSEG_CHECK_FILE(bytes.size() == h.data_offset + want, path, "array '", key, "' holds ",
                      bytes.size() - h.data_offset, " data bytes; its header says ", want);
    std::vector<float> out(static_cast<size_t>(h.numel()));
    std::memcpy(out.data(), bytes.data() + h.data_offset, want);
    shape = h.shape;
    return out;
  }
  throw FileError(path, concat("holds no array '", key, "' (no ", name, " entry)"));
}

}  // namespace medseg::preprocessing
