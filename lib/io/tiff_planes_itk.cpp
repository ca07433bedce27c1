// TIFF stacks kept as separate sample planes of one page (PlanarConfiguration 2), read with libtiff: how
// tifffile stores a (3|4, y, x) array, which nnU-Net's Tiff3DIO reads as 3 or 4 slices. ITK's TIFF
// reader falls back to 8-bit RGBA for such files, so they do not go through it (image_io_itk.cpp).
// Built with ITK only, as the other readers.
#include <tiffio.h>

#include <memory>

#include "core/error.h"
#include "io/tiff_planes.h"

namespace medseg::io {
namespace {

PixelType plane_pixel_type(const std::string& path, uint16_t bits, uint16_t format) {
  if (format == SAMPLEFORMAT_IEEEFP && bits == 32) return PixelType::Float32;
  if (format == SAMPLEFORMAT_IEEEFP && bits == 64) return PixelType::Float64;
  const bool sign = format == SAMPLEFORMAT_INT;
  if (format == SAMPLEFORMAT_UINT || sign) {
    if (bits == 8) return sign ? PixelType::Int8 : PixelType::UInt8;
    if (bits == 16) return sign ? PixelType::Int16 : PixelType::UInt16;
    if (bits == 32) return sign ? PixelType::Int32 : PixelType::UInt32;
  }
  throw FileError(path, concat("TIFF samples of ", bits, " bits in format ", format, " are not supported"));
}

}  // namespace

Volume read_tiff_planes(const std::string& path, const Geometry& g) {
  // libtiff reports through process-wide handlers; a failed call's return value is what is checked here.
  std::unique_ptr<TIFF, void (*)(TIFF*)> tif(TIFFOpen(path.c_str(), "r"), TIFFClose);
  MEDSEG_CHECK_FILE(tif, path, "not a readable TIFF file");
  uint32_t w = 0, h = 0;
  uint16_t spp = 1, bits = 8, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
  TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &h);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_PLANARCONFIG, &planar);
  MEDSEG_CHECK_FILE(planar == PLANARCONFIG_SEPARATE && w != 0 && h != 0, path, "not a TIFF of separate sample planes");
  MEDSEG_CHECK_FILE(!TIFFIsTiled(tif.get()), path, "tiled TIFF stacks of separate planes are not supported");
  const PixelType type = plane_pixel_type(path, bits, format);
  Volume v(type, {static_cast<int64_t>(spp), static_cast<int64_t>(h), static_cast<int64_t>(w)}, g);
  const tmsize_t row_bytes = TIFFScanlineSize(tif.get());
  MEDSEG_CHECK_FILE(row_bytes == static_cast<tmsize_t>(w) * (bits / 8), path, "unexpected TIFF scanline size");
  char* dst = static_cast<char*>(v.raw());
  for (uint16_t s = 0; s < spp; ++s)
    for (uint32_t y = 0; y < h; ++y, dst += row_bytes)
      MEDSEG_CHECK_FILE(TIFFReadScanline(tif.get(), dst, y, s) >= 0, path, "cannot read plane ", s, " row ", y,
                        " (truncated or corrupt file?)");
  return v;
}

}  // namespace medseg::io
