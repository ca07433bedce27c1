#pragma once
// nnU-Net's image families, chosen from the file name as its reader_writer_registry chooses a reader:
//   - medical formats (NIfTI, NRRD, MetaImage, GIPL): geometry from the header;
//   - natural 2D images (.png, .bmp, and .tif holding a 2D image: NaturalImage2DIO): spacing 1 in-plane,
//     999 between slices, origin 0, identity direction whatever the file says; an RGB(A) file carries
//     3 (4) channels, in that order;
//   - 3D TIFF (.tif/.tiff holding a stack: Tiff3DIO): spacing from a JSON sidecar {"spacing": [z, y, x]}
//     named after the case (image CASE_0000.tif -> CASE.json; label CASE.tif -> CASE.json), 1 without one.
// Predictions are written in the input's family (image_io.h's write_image picks it from the name).
#include <array>
#include <cstdint>
#include <string>

namespace medseg::io {

enum class ImageFamily { Medical, Natural2D, Tiff };

// The family of a file name (case-insensitive ending). Tiff is 2D or 3D: the header decides.
ImageFamily image_family(const std::string& path);

// True when one file of this dataset.json file_ending may carry several channels (RGB/RGBA natural images).
bool multi_channel_ending(const std::string& file_ending);

// The number of channels a file holds: 3 or 4 for an RGB(A) natural image, else 1. Reads the header
// only; throws FileError naming the file when it cannot be read.
int image_file_channels(const std::string& path);

// The (z, y, x) shape a file declares (z 1 for a 2D image; a 4D file's fourth axis left out), from its
// header only, with the checks every read makes. Throws FileError naming the file.
std::array<int64_t, 3> image_file_shape(const std::string& path);

// True when a TIFF file keeps its samples in separate planes (PlanarConfiguration 2 in the first
// directory): how tifffile stores a (3|4, y, x) stack. nnU-Net reads such a file as 3 or 4 slices, not as
// a color image; false for any other file or one that cannot be parsed.
bool tiff_planar_separate(const std::string& path);

// The spacing sidecar that applies to a TIFF file: "<stem>.json" when it exists (a label), else
// "<case>.json" for an image named <case>_XXXX.tif(f); "" when neither exists.
std::string tiff_sidecar_for(const std::string& tiff_path);

// The spacing in a sidecar, returned as (x, y, z). The file holds {"spacing": [z, y, x]} (nnU-Net's
// order); anything else (bad JSON, not 3 positive finite numbers) is a FileError naming the sidecar.
std::array<double, 3> read_tiff_sidecar(const std::string& json_path);

// Writes the sidecar for `tiff_path` (<stem>.json beside it) with spacing given as (x, y, z).
void write_tiff_sidecar(const std::string& tiff_path, const std::array<double, 3>& spacing_xyz);

}  // namespace medseg::io
