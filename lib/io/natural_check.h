#pragma once
// libpng, libtiff and ITK's BMP reader end the process (abort in libpng's error path) or allocate
// whatever a header declares, so every 2D natural image is checked on its raw bytes before ITK opens it
// (issue 42: a PNG cut to 20 bytes aborted three commands; a 250 KB all-zero 16000x16000 PNG ran for
// minutes at 3.4 GB).
#include <cstdint>
#include <string>

namespace medseg::io {

// The largest natural image medseg decodes: 2^26 pixels (8192 x 8192). As float32 channels of an RGBA
// image that is 1 GiB, about what one 2D case of nnU-Net's natural-image datasets may take in
// preprocessing; more is a decompression bomb or not a 2D case.
constexpr int64_t kMaxNaturalImagePixels = int64_t(1) << 26;

// The largest 3D TIFF stack: 2^31 voxels (e.g. 1290^3), 8 GiB as float32, beyond any one case that
// fits the machines medseg plans for; a TIFF header declaring more is refused before ITK allocates it.
constexpr int64_t kMaxTiffStackVoxels = int64_t(1) << 31;

// Throws FileError naming the file when a .png is not one libpng decodes without an error: a bad
// signature, a chunk cut short or with a bad CRC, an IHDR libpng refuses (width or height 0 or beyond
// 2^31-1, a bit depth the color type cannot have), an unknown critical chunk, a missing or misplaced
// PLTE/IDAT/IEND, or image data that does not inflate to exactly the rows the header declares with
// valid filter bytes. Refuses images over kMaxNaturalImagePixels before inflating anything. Files of
// other formats pass untouched.
void check_png_complete(const std::string& path);

// The same for a .bmp: the header's sizes against kMaxNaturalImagePixels and, for uncompressed pixels,
// against the bytes the file holds.
void check_bmp_complete(const std::string& path);

}  // namespace medseg::io
