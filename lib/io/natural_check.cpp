#include "io/natural_check.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include "io/image_formats.h"

namespace medseg::io {
namespace {

uint32_t be32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
uint32_t le32(const unsigned char* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint32_t le16(const unsigned char* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  MEDSEG_CHECK_FILE(f, path, "cannot be opened");
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void check_pixels(const std::string& path, int64_t width, int64_t height) {
  MEDSEG_CHECK_FILE(width * height <= kMaxNaturalImagePixels, path, "declares ", width, " x ", height,
                    " pixels; medseg reads 2D images of up to ", kMaxNaturalImagePixels, " pixels (8192 x 8192)");
}

struct Ihdr {
  int64_t width = 0, height = 0;
  int depth = 0, color = 0;
  bool interlaced = false;
  int channels() const { return color == 0 || color == 3 ? 1 : color == 2 ? 3 : color == 4 ? 2 : 4; }
  int64_t row_bytes(int64_t w) const { return (w * channels() * depth + 7) / 8; }
};

Ihdr parse_ihdr(const std::string& path, const unsigned char* d, uint32_t length) {
  MEDSEG_CHECK_FILE(length == 13, path, "corrupt PNG: IHDR is not 13 bytes");
  Ihdr h;
  h.width = be32(d);
  h.height = be32(d + 4);
  h.depth = d[8];
  h.color = d[9];
  MEDSEG_CHECK_FILE(h.width != 0 && h.height != 0 && h.width <= 0x7fffffff && h.height <= 0x7fffffff, path,
                    "corrupt PNG: its header declares ", h.width, " x ", h.height, " pixels");
  static const std::array<std::vector<int>, 7> depths = {
      std::vector<int>{1, 2, 4, 8, 16}, {}, {8, 16}, {1, 2, 4, 8}, {8, 16}, {}, {8, 16}};
  const bool valid_color = h.color < 7 && !depths[static_cast<size_t>(h.color)].empty();
  bool valid_depth = false;
  if (valid_color)
    for (int v : depths[static_cast<size_t>(h.color)]) valid_depth = valid_depth || v == h.depth;
  MEDSEG_CHECK_FILE(valid_depth && d[10] == 0 && d[11] == 0 && d[12] <= 1, path, "corrupt PNG: color type ", h.color,
                    " with bit depth ", h.depth, ", compression ", int(d[10]), ", filter ", int(d[11]), ", interlace ",
                    int(d[12]), " is not valid");
  h.interlaced = d[12] == 1;
  check_pixels(path, h.width, h.height);
  return h;
}

// The rows the inflated image data holds, in order, as (count, bytes per row without the filter byte).
std::vector<std::pair<int64_t, int64_t>> png_rows(const Ihdr& h) {
  if (!h.interlaced) return {{h.height, h.row_bytes(h.width)}};
  static const int pass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                 {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};  // Adam7: x0, y0, dx, dy
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (const auto& p : pass) {
    const int64_t w = h.width > p[0] ? (h.width - p[0] + p[2] - 1) / p[2] : 0;
    const int64_t n = h.height > p[1] ? (h.height - p[1] + p[3] - 1) / p[3] : 0;
    if (w > 0 && n > 0) rows.emplace_back(n, h.row_bytes(w));
  }
  return rows;
}

// Inflates the image data and walks its rows: each starts with a filter byte 0-4, and the stream ends
// exactly after the last row. Memory stays at one 64 KB buffer whatever the image's size.
void check_png_data(const std::string& path, const std::string& data, const Ihdr& h) {
  // #lizard forgives: one pass of zlib's inflate loop over PNG's row layout; split, its state would travel apart
  const auto rows = png_rows(h);
  size_t block = 0;
  int64_t row = 0, at = -1;  // at: the byte within the current row, -1 for its filter byte
  z_stream z{};
  MEDSEG_CHECK_FILE(inflateInit(&z) == Z_OK, path, "zlib cannot start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::vector<unsigned char> out(1 << 16);
  int rc = Z_OK;
  std::string problem;
  while (rc == Z_OK && problem.empty()) {
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      problem = std::string("its image data is not a valid zlib stream (") + (z.msg ? z.msg : "truncated") + ")";
      break;
    }
    const size_t got = out.size() - z.avail_out;
    for (size_t i = 0; i < got && problem.empty();) {
      if (block == rows.size()) {
        problem = "its image data holds more than the rows its header declares";
        break;
      }
      if (at < 0) {
        if (out[i] > 4) problem = concat("row ", row, " has filter type ", int(out[i]), " (PNG has 0-4)");
        ++i;
        at = 0;
      } else {
        const int64_t take = std::min<int64_t>(rows[block].second - at, static_cast<int64_t>(got - i));
        i += static_cast<size_t>(take);
        at += take;
      }
      if (at == rows[block].second) {
        at = -1;
        if (++row == rows[block].first) {
          row = 0;
          ++block;
        }
      }
    }
    if (rc == Z_OK && got == 0 && z.avail_in == 0)
      problem = "its image data ends before the last row (truncated file?)";
  }
  inflateEnd(&z);
  if (problem.empty() && block != rows.size()) problem = "its image data ends before the last row (truncated file?)";
  MEDSEG_CHECK_FILE(problem.empty(), path, "corrupt PNG: ", problem);
}

// An 8-bit run-length-encoded BMP stream, walked as ITK 5.2's BMPImageIO::Read decodes it (bottom row
// first; runs, end of line, end of bitmap, delta, literal runs padded to 16 bits). ITK checks nothing: a
// run past the row or a delta past the image wrote outside its buffer (found by the natural_image fuzz
// target: a heap corruption). Every pixel must land inside the image and every byte inside the data.
void check_bmp_rle8(const std::string& path, const unsigned char* d, size_t size, int64_t width, int64_t height) {
  int64_t line = height - 1, x = 0;
  const auto fail = [&](const std::string& why) { throw FileError(path, "corrupt BMP: its RLE8 data " + why); };
  const auto put = [&](int64_t count) {
    if (line < 0 || line >= height || x < 0 || x + count > width) fail("writes outside the image");
    x += count;
  };
  for (size_t i = 0; i < size; i += 2) {
    if (i + 1 >= size) fail("ends inside a code");
    const unsigned b1 = d[i], b2 = d[i + 1];
    if (b1 > 0) {
      put(b1);
    } else if (b2 == 0) {  // end of line
      --line;
      x = 0;
    } else if (b2 == 1) {  // end of bitmap
      return;
    } else if (b2 == 2) {  // delta
      if (i + 3 >= size) fail("ends inside a delta");
      x += d[i + 2];
      line -= d[i + 3];
      i += 2;
    } else {  // a literal run of b2 indices, padded to an even count
      if (i + 1 + b2 >= size) fail("ends inside a literal run");
      put(b2);
      i += b2 + (b2 % 2);
    }
  }
}

}  // namespace

void check_png_complete(const std::string& path) {
  // #lizard forgives: PNG's chunk layout checked in file order, one condition per rule of the format
  if (!ends_with(lower(path), ".png")) return;
  const std::string bytes = read_all(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  MEDSEG_CHECK_FILE(n >= 8 && std::equal(signature, signature + 8, p), path, "not a PNG file (bad signature)");
  Ihdr h;
  std::string data;  // the IDAT chunks' bytes, concatenated
  bool ihdr = false, plte = false, idat_done = false, iend = false;
  for (size_t at = 8; !iend;) {
    MEDSEG_CHECK_FILE(n - at >= 12, path, "corrupt PNG: cut short at byte ", at, " (truncated file?)");
    const uint32_t length = be32(p + at);
    const std::string type(reinterpret_cast<const char*>(p + at + 4), 4);
    MEDSEG_CHECK_FILE(length <= 0x7fffffff && length <= n - at - 12, path, "corrupt PNG: chunk at byte ", at,
                      " runs past the end (truncated file?)");
    for (char c : type)
      MEDSEG_CHECK_FILE(std::isalpha(static_cast<unsigned char>(c)), path, "corrupt PNG: chunk at byte ", at,
                        " has no valid type");
    const unsigned char* d = p + at + 8;
    MEDSEG_CHECK_FILE(be32(d + length) == crc32(crc32(0L, Z_NULL, 0), p + at + 4, length + 4), path,
                      "corrupt PNG: chunk ", type, " fails its CRC check");
    MEDSEG_CHECK_FILE(ihdr || type == "IHDR", path, "corrupt PNG: the first chunk is not IHDR");
    const bool critical = std::isupper(static_cast<unsigned char>(type[0]));
    if (type == "IHDR") {
      MEDSEG_CHECK_FILE(!ihdr, path, "corrupt PNG: two IHDR chunks");
      h = parse_ihdr(path, d, length);
      ihdr = true;
    } else if (type == "PLTE") {
      MEDSEG_CHECK_FILE(!plte && data.empty() && length % 3 == 0 && length != 0 && length / 3 <= 256 && h.color != 0 &&
                            h.color != 4 && (h.color != 3 || length / 3 <= (1u << h.depth)),
                        path, "corrupt PNG: a PLTE chunk this image cannot have");
      plte = true;
    } else if (type == "IDAT") {
      MEDSEG_CHECK_FILE(!idat_done, path, "corrupt PNG: IDAT chunks are not consecutive");
      data.append(reinterpret_cast<const char*>(d), length);
    } else if (type == "IEND") {
      iend = true;
    } else if (critical) {
      throw FileError(path, "corrupt PNG: unknown critical chunk " + type);
    }
    if (type != "IDAT" && !data.empty()) idat_done = true;
    at += 12 + static_cast<size_t>(length);
  }
  MEDSEG_CHECK_FILE(!data.empty(), path, "corrupt PNG: no image data (IDAT)");
  MEDSEG_CHECK_FILE(h.color != 3 || plte, path, "corrupt PNG: a palette image without its palette (PLTE)");
  check_png_data(path, data, h);
}

void check_bmp_complete(const std::string& path) {
  // #lizard forgives: BMP's header layout checked field by field, one condition per rule of the format
  if (!ends_with(lower(path), ".bmp")) return;
  const std::string bytes = read_all(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  MEDSEG_CHECK_FILE(n >= 26 && p[0] == 'B' && p[1] == 'M', path, "not a BMP file (too short or no 'BM')");
  const uint32_t offset = le32(p + 10), dib = le32(p + 14);
  int64_t width = 0, height = 0;
  uint32_t bpp = 0, compression = 0;
  if (dib == 12) {  // OS/2 BITMAPCOREHEADER
    width = le16(p + 18);
    height = le16(p + 20);
    bpp = le16(p + 24);
  } else if (dib >= 40 && n >= 34) {
    width = static_cast<int32_t>(le32(p + 18));
    height = static_cast<int32_t>(le32(p + 22));  // negative: rows top-down
    bpp = le16(p + 28);
    compression = le32(p + 30);
  } else {
    throw FileError(path, concat("corrupt BMP: header of ", dib, " bytes"));
  }
  height = height < 0 ? -height : height;
  MEDSEG_CHECK_FILE(width > 0 && height > 0, path, "corrupt BMP: its header declares ", width, " x ", height,
                    " pixels");
  check_pixels(path, width, height);
  MEDSEG_CHECK_FILE(bpp == 1 || bpp == 4 || bpp == 8 || bpp == 16 || bpp == 24 || bpp == 32, path, "corrupt BMP: ", bpp,
                    " bits per pixel");
  const int64_t row = (width * bpp + 31) / 32 * 4;
  // ITK decodes RLE8 (compression 1) itself and reads any other compression as raw rows, so only raw rows
  // (0), bit fields (3, raw rows with masks) and checked RLE8 are let through.
  MEDSEG_CHECK_FILE(compression == 0 || compression == 3 || (compression == 1 && bpp == 8), path, "BMP compression ",
                    compression, " with ", bpp, " bits per pixel is not read ", "(uncompressed or 8-bit RLE only)");
  MEDSEG_CHECK_FILE(offset <= n && (compression == 1 || row * height <= static_cast<int64_t>(n - offset)), path,
                    "corrupt BMP: its header declares ", width, " x ", height, " pixels but the file ",
                    "holds fewer bytes (truncated file?)");
  if (compression == 1) {
    const uint32_t data_size = le32(p + 34);
    MEDSEG_CHECK_FILE(dib >= 40 && data_size <= n - offset, path,
                      "corrupt BMP: its RLE8 data runs past the end of the file (truncated file?)");
    check_bmp_rle8(path, p + offset, data_size, width, height);
  }
}

}  // namespace medseg::io
