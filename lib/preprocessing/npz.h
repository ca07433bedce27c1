#pragma once
// numpy .npz files: a zip archive of .npy arrays, one entry per key ("probabilities" -> probabilities.npy),
// deflated as np.savez_compressed writes them. nnU-Net saves predicted probabilities so (CASE.npz, key
// "probabilities", (class, z, y, x)); no pickle is read or written here.
#include <string>
#include <vector>

namespace medseg::preprocessing {

// Writes one float32 array under `key`, atomically (nothing appears at `path` before it is complete).
void write_npz_float32(const std::string& path, const std::string& key, const std::vector<int64_t>& shape,
                       const float* data);

// Reads the float32 array `key` (little-endian '<f4', C order). Throws FileError naming the file for a
// missing file or key, another dtype, Fortran order, or data that does not match the header.
std::vector<float> read_npz_float32(const std::string& path, const std::string& key, std::vector<int64_t>& shape);

}  // namespace medseg::preprocessing
