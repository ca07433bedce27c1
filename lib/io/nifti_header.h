#pragma once
// The fields of a NIfTI-1 (348-byte) or NIfTI-2 (540-byte) header that medseg checks before ITK
// reads the file, decoded from the raw bytes (either byte order).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace medseg::io {

struct NiftiHeader {
  int version = 1;  // 1 or 2
  bool swapped = false;
  int64_t ndim = 0;
  std::array<int64_t, 8> dim{};    // dim[1..ndim] voxels per axis
  std::array<double, 8> pixdim{};  // pixdim[0] = qfac, pixdim[1..3] = x, y, z spacing
  int datatype = 0;
  int bitpix = 0;
  int64_t vox_offset = 0;
  int qform_code = 0, sform_code = 0;
  std::array<double, 3> quatern{};  // b, c, d
  std::array<double, 3> qoffset{};  // x, y, z
  std::array<double, 12> srow{};    // srow_x, srow_y, srow_z (4 each)
};

// Decodes the header at the start of `bytes`; throws FileError naming `path` when there are
// fewer bytes than a header or the size field is neither 348 nor 540 in either byte order.
NiftiHeader parse_nifti_header(const std::string& path, const unsigned char* bytes, size_t n);

// What is wrong with the header's geometry, "" when nothing: non-finite or absurdly large
// (beyond 1e9) sform, quaternion or offset; non-finite, zero, negative or absurdly large spacing
// along an axis the image has; a singular sform. ITK abort()s on a non-finite sform, silently
// takes spacing 1 for a bad pixdim and hangs in its SVD on values near FLT_MAX.
std::string nifti_geometry_problem(const NiftiHeader& h);

}  // namespace medseg::io
