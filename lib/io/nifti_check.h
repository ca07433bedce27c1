#pragma once
// ITK reads a truncated NIfTI file without complaint (the missing voxels come back as zeros or
// garbage) and abort()s on a NaN sform, so every NIfTI file is checked before ITK sees it.
#include <cstdint>
#include <string>

namespace medseg::io {

// Throws FileError naming the file when a .nii/.nii.gz is truncated, has a corrupt gzip stream,
// holds fewer voxel bytes than its header promises, or has geometry ITK cannot take (a NaN/Inf or
// singular sform, a NaN/Inf quaternion, zero/negative/NaN spacing: nifti_header.h). Files of other
// formats pass untouched.
// Returns the number of NaN/Inf voxels of a float32/float64 NIfTI file: ITK's NIfTI library
// silently replaces them with 0, so they can only be seen in the raw bytes.
int64_t check_nifti_complete(const std::string& path);

}  // namespace medseg::io
