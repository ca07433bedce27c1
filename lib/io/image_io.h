#pragma once
// Image IO on ITK: NIfTI (.nii, .nii.gz) and whatever ITK's factories provide (NRRD, MHA/MHD).
// Volumes keep their pixel type and full geometry (spacing, origin, direction).
// This header does not expose ITK; ITK lives in *_itk.cpp files only.
#include <string>
#include <vector>

#include "core/volume.h"

namespace medseg::io {

// True when this build has image IO (MEDSEG_WITH_ITK).
bool image_io_available();

// Reads a 2D or 3D scalar image. 2D images become shape (1, y, x). Throws FileError naming the
// file for: missing/empty file, unknown format, truncated or corrupt data, vector/4D images.
Volume read_image(const std::string& path);

// Reads a 2D or 3D image as one volume, or a 4D image (x, y, z, t) as one 3D volume per t, each with
// the 3D part of the file's geometry (the Medical Segmentation Decathlon's multi-modal files). The
// checks of read_image apply.
std::vector<Volume> read_image_volumes(const std::string& path);

// Reads a label map: the pixel type must be integer, or float/double with only integral values
// (as many tools write labels); anything else is a FileError. Returned as Int16 if values fit,
// Int32 otherwise.
Volume read_label(const std::string& path);

// Writes with the pixel type and geometry of `v`. Compression follows the extension (.nii.gz).
// Written atomically: a temp file in the same folder is renamed into place.
void write_image(const std::string& path, const Volume& v);

// Checks every voxel is finite; returns the number of NaN/Inf voxels.
int64_t count_non_finite(const Volume& v);

}  // namespace medseg::io
