// Issue 42: PNG and BMP files that libpng or ITK could not take ended the process (exit 134, "libpng
// error") or allocated what the header declared. Valid files written by libpng itself (interlaced, odd
// sizes, 16-bit, palettes) must still read; broken ones are refused naming the file, before ITK opens them.
#include <gtest/gtest.h>
#include <png.h>
#include <zlib.h>

#include <csetjmp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "io/natural_check.h"
#include "support/bad_input.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

void put_be32(std::string& s, uint32_t v) {
  for (int k = 3; k >= 0; --k) s += static_cast<char>((v >> (8 * k)) & 0xff);
}

// One PNG chunk: length, type, data, CRC32 of type and data (the PNG specification's layout).
std::string chunk(const std::string& type, const std::string& data) {
  std::string c;
  put_be32(c, static_cast<uint32_t>(data.size()));
  const std::string body = type + data;
  c += body;
  put_be32(
      c, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
  return c;
}

std::string ihdr(uint32_t w, uint32_t h, int depth = 8, int color = 0, int interlace = 0) {
  std::string d;
  put_be32(d, w);
  put_be32(d, h);
  d += static_cast<char>(depth);
  d += static_cast<char>(color);
  d += std::string(2, '\0');
  d += static_cast<char>(interlace);
  return chunk("IHDR", d);
}

// zlib's deflate of `rows` rows of `row_bytes` zeros, each after filter byte `filter`, streamed so that a
// 16000 x 16000 image never exists in memory.
std::string deflated_rows(int64_t rows, int64_t row_bytes, int filter = 0) {
  z_stream z{};
  deflateInit(&z, 9);
  std::vector<unsigned char> row(static_cast<size_t>(row_bytes + 1), 0), out(1 << 16);
  row[0] = static_cast<unsigned char>(filter);
  std::string result;
  for (int64_t r = 0; r <= rows; ++r) {
    z.next_in = row.data();
    z.avail_in = r < rows ? static_cast<uInt>(row.size()) : 0;
    const int flush = r < rows ? Z_NO_FLUSH : Z_FINISH;
    do {
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      deflate(&z, flush);
      result.append(reinterpret_cast<const char*>(out.data()), out.size() - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return result;
}

// io::read_image refuses `path` with one FileError that starts with the path and holds `fragment`.
void expect_read_refused(const std::string& path, const std::string& fragment) {
  try {
    io::read_image(path);
    ADD_FAILURE() << "read " << path;
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

const std::string kSignature = std::string("\x89PNG\r\n\x1a\n", 8);

std::string gray_png(uint32_t w, uint32_t h, int filter = 0) {
  return kSignature + ihdr(w, h) + chunk("IDAT", deflated_rows(h, w, filter)) + chunk("IEND", "");
}

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// libpng's own writer: width x height, `channels` of `depth` bits, optionally Adam7-interlaced; pixel
// values (x + 3y) mod 2^depth in every channel. Returns the values as read back in row-major order.
std::vector<double> libpng_write(const std::string& path, int w, int h, int color, int depth, bool interlaced) {
  FILE* f = std::fopen(path.c_str(), "wb");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) ADD_FAILURE() << "libpng failed to write " << path;
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), depth, color,
               interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> palette(16);
  for (int i = 0; i < 16; ++i) palette[static_cast<size_t>(i)] = {static_cast<png_byte>(i * 16), 0, 0};
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_PLTE(png, info, palette.data(), 16);
  png_write_info(png, info);
  if (depth == 16) png_set_swap(png);  // rows below are little-endian 16-bit
  const int channels = color == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : 1;
  const int max = (1 << depth) - 1;
  std::vector<std::vector<png_byte>> rows(static_cast<size_t>(h));
  std::vector<double> values;
  for (int y = 0; y < h; ++y) {
    auto& r = rows[static_cast<size_t>(y)];
    r.assign(static_cast<size_t>((w * channels * depth + 7) / 8 + 2), 0);
    for (int x = 0; x < w; ++x) {
      const int v = (x + 3 * y) % (max + 1);
      values.push_back(v);
      for (int c = 0; c < channels; ++c) {
        const int i = x * channels + c;
        if (depth == 16) {
          r[static_cast<size_t>(2 * i)] = static_cast<png_byte>(v & 0xff);
          r[static_cast<size_t>(2 * i + 1)] = static_cast<png_byte>(v >> 8);
        } else if (depth == 8) {
          r[static_cast<size_t>(i)] = static_cast<png_byte>(v);
        } else {  // 4-bit palette indices, two per byte, high nibble first
          r[static_cast<size_t>(i / 2)] |= static_cast<png_byte>(v << (i % 2 ? 0 : 4));
        }
      }
    }
  }
  std::vector<png_bytep> pointers;
  for (auto& r : rows) pointers.push_back(r.data());
  png_write_image(png, pointers.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
  return values;
}

TEST(NaturalImageChecks, FilesLibpngWritesStillRead) {
  test::TempDir d("png");
  struct Case {
    const char* name;
    int w, h, color, depth;
    bool interlaced;
  };
  for (const Case& c : {Case{"gray8.png", 37, 23, PNG_COLOR_TYPE_GRAY, 8, false},
                        Case{"gray8_adam7.png", 37, 23, PNG_COLOR_TYPE_GRAY, 8, true},
                        Case{"gray16_adam7.png", 5, 3, PNG_COLOR_TYPE_GRAY, 16, true},
                        Case{"rgba8_adam7.png", 9, 1, PNG_COLOR_TYPE_RGB_ALPHA, 8, true},
                        Case{"one_pixel_adam7.png", 1, 1, PNG_COLOR_TYPE_GRAY, 8, true}}) {
    SCOPED_TRACE(c.name);
    const std::vector<double> want = libpng_write(d / c.name, c.w, c.h, c.color, c.depth, c.interlaced);
    EXPECT_NO_THROW(io::check_png_complete(d / c.name));
    const std::vector<Volume> channels = io::read_image_volumes(d / c.name);
    ASSERT_FALSE(channels.empty());
    EXPECT_EQ(channels[0].to_double(), want);
  }
  libpng_write(d / "palette4.png", 7, 5, PNG_COLOR_TYPE_PALETTE, 4, true);
  EXPECT_NO_THROW(io::check_png_complete(d / "palette4.png"));
  EXPECT_NO_THROW(io::read_image_volumes(d / "palette4.png"));
}

struct Broken {
  const char* name;
  std::string bytes;
  const char* fragment;
};

std::vector<Broken> broken_pngs() {
  const std::string good = gray_png(16, 8);
  std::string bad_crc = good;
  bad_crc[good.size() - 20] ^= 1;  // a byte of the IDAT data
  std::string filter7 = kSignature + ihdr(16, 8) + chunk("IDAT", deflated_rows(8, 16, 7)) + chunk("IEND", "");
  return {
      {"cut to 20 bytes", good.substr(0, 20), "corrupt PNG: chunk at byte 8 runs past the end (truncated file?)"},
      {"cut in the image data", good.substr(0, good.size() - 20), "runs past the end (truncated file?)"},
      {"no IEND", good.substr(0, good.size() - 12), "cut short"},
      {"width 0", kSignature + ihdr(0, 8) + chunk("IDAT", deflated_rows(8, 1)) + chunk("IEND", ""),
       "its header declares 0 x 8 pixels"},
      {"width 2^31-1", kSignature + ihdr(0x7fffffff, 1) + chunk("IDAT", deflated_rows(1, 1)) + chunk("IEND", ""),
       "declares 2147483647 x 1 pixels; medseg reads 2D images of up to 67108864 pixels"},
      {"height 2^31", kSignature + ihdr(1, 0x80000000u) + chunk("IDAT", deflated_rows(1, 1)) + chunk("IEND", ""),
       "its header declares 1 x 2147483648 pixels"},
      {"bit depth 3", kSignature + ihdr(4, 4, 3) + chunk("IDAT", deflated_rows(4, 2)) + chunk("IEND", ""),
       "bit depth 3"},
      {"bad CRC", bad_crc, "fails its CRC check"},
      {"unknown critical chunk",
       kSignature + ihdr(16, 8) + chunk("ABCD", "x") + chunk("IDAT", deflated_rows(8, 16)) + chunk("IEND", ""),
       "unknown critical chunk ABCD"},
      {"filter type 7", filter7, "filter type 7"},
      {"too few rows", kSignature + ihdr(16, 8) + chunk("IDAT", deflated_rows(7, 16)) + chunk("IEND", ""),
       "ends before the last row"},
      {"too many rows", kSignature + ihdr(16, 8) + chunk("IDAT", deflated_rows(9, 16)) + chunk("IEND", ""),
       "more than the rows its header declares"},
      {"not zlib", kSignature + ihdr(16, 8) + chunk("IDAT", std::string(40, 'x')) + chunk("IEND", ""),
       "not a valid zlib stream"},
      {"palette image without PLTE",
       kSignature + ihdr(16, 8, 8, 3) + chunk("IDAT", deflated_rows(8, 16)) + chunk("IEND", ""), "without its palette"},
  };
}

TEST(NaturalImageChecks, BrokenPngsAreRefusedNamingTheFile) {
  test::TempDir d("png");
  for (const Broken& b : broken_pngs()) {
    SCOPED_TRACE(b.name);
    write(d / "case_0000.png", b.bytes);
    expect_read_refused(d / "case_0000.png", b.fragment);
  }
}

// An all-zero 16000 x 16000 PNG is 250 KB; it is refused from its header, in bounded time and memory.
TEST(NaturalImageChecks, APngBombIsRefusedBeforeDecoding) {
  test::TempDir d("png");
  write(d / "bomb.png", gray_png(16000, 16000));
  EXPECT_LT(fs::file_size(d / "bomb.png"), 1u << 20);
  expect_read_refused(d / "bomb.png", "declares 16000 x 16000 pixels");
}

TEST(NaturalImageChecks, BrokenBmpsAreRefusedNamingTheFile) {
  const auto bmp = [](int32_t w, int32_t h, uint16_t bpp, size_t pixel_bytes) {
    std::string s = "BM";
    auto le = [&](uint32_t v, int n) {
      for (int k = 0; k < n; ++k) s += static_cast<char>((v >> (8 * k)) & 0xff);
    };
    le(static_cast<uint32_t>(54 + pixel_bytes), 4);
    le(0, 4);
    le(54, 4);
    le(40, 4);
    le(static_cast<uint32_t>(w), 4);
    le(static_cast<uint32_t>(h), 4);
    le(1, 2);
    le(bpp, 2);
    le(0, 4);
    le(static_cast<uint32_t>(pixel_bytes), 4);
    le(2835, 4);
    le(2835, 4);
    le(0, 4);
    le(0, 4);
    return s + std::string(pixel_bytes, '\0');
  };
  test::TempDir d("bmp");
  write(d / "ok.bmp", bmp(5, 3, 24, 16 * 3));  // rows of 15 bytes padded to 16
  EXPECT_EQ(io::read_image_volumes(d / "ok.bmp").size(), 3u);
  for (const Broken& b : std::vector<Broken>{{"cut", bmp(5, 3, 24, 16 * 3).substr(0, 20), "not a BMP file"},
                                             {"rows missing", bmp(5, 3, 24, 16 * 2), "holds fewer bytes"},
                                             {"width 2^31-1", bmp(0x7fffffff, 1, 8, 4), "declares 2147483647 x 1"},
                                             {"width 0", bmp(0, 1, 8, 4), "declares 0 x 1"}}) {
    SCOPED_TRACE(b.name);
    write(d / "case.bmp", b.bytes);
    expect_read_refused(d / "case.bmp", b.fragment);
  }
}

// 8-bit RLE BMPs: ITK 5.2 decodes them without a bounds check (a fuzzed file corrupted its heap). A valid
// stream (bottom row first) reads as encoded; runs and deltas that leave the image are refused.
TEST(NaturalImageChecks, RunLengthBmpsAreWalkedBeforeItkDecodesThem) {
  const auto rle_bmp = [](const std::string& data) {
    std::string s = "BM";
    auto le = [&](uint32_t v, int n) {
      for (int k = 0; k < n; ++k) s += static_cast<char>((v >> (8 * k)) & 0xff);
    };
    const uint32_t offset = 54 + 256 * 4;
    le(static_cast<uint32_t>(offset + data.size()), 4);
    le(0, 4);
    le(offset, 4);
    le(40, 4);
    le(4, 4);  // width
    le(2, 4);  // height, bottom-up
    le(1, 2);
    le(8, 2);
    le(1, 4);  // BI_RLE8
    le(static_cast<uint32_t>(data.size()), 4);
    le(2835, 4);
    le(2835, 4);
    le(256, 4);
    le(0, 4);
    for (int i = 0; i < 256; ++i) le(static_cast<uint32_t>(i * 0x010101), 4);  // a gray palette
    return s + data;
  };
  test::TempDir d("rle");
  // Bottom row: 4 x 5; end of line; top row: literal 7 8 9 (padded), then 1 x 6; end of bitmap.
  write(d / "ok.bmp", rle_bmp(std::string("\x04\x05\x00\x00\x00\x03\x07\x08\x09\x00\x01\x06\x00\x01", 14)));
  EXPECT_EQ(io::read_image(d / "ok.bmp").to_double(), (std::vector<double>{7, 8, 9, 6, 5, 5, 5, 5}));
  for (const Broken& b : std::vector<Broken>{
           {"run past the row", rle_bmp(std::string("\xc8\x05\x00\x01", 4)), "writes outside the image"},
           {"delta past the image", rle_bmp(std::string("\x00\x02\x00\x05\x01\x05\x00\x01", 8)),
            "writes outside the image"},
           {"literal cut short", rle_bmp(std::string("\x00\x04\x01\x02", 4)), "ends inside a literal run"},
           {"fuzz finding",
            test::read_text(test::source_path("tests/fuzz/findings/natural_image_bmp_rle8_heap_overflow.bin"))
                .substr(1),
            "corrupt BMP"}}) {
    SCOPED_TRACE(b.name);
    write(d / "case.bmp", b.bytes);
    expect_read_refused(d / "case.bmp", b.fragment);
  }
}

// A baseline TIFF by hand (TIFF 6.0: header, one IFD of 9 entries, one uncompressed strip).
std::string tiff(uint32_t w, uint32_t h, size_t strip_bytes) {
  std::string s = std::string("II*\0", 4);
  auto le = [&](uint32_t v, int n) {
    for (int k = 0; k < n; ++k) s += static_cast<char>((v >> (8 * k)) & 0xff);
  };
  le(8, 4);  // the IFD follows the header
  const uint32_t data = 8 + 2 + 9 * 12 + 4;
  le(9, 2);
  auto entry = [&](uint16_t tag, uint16_t type, uint32_t value) {
    le(tag, 2);
    le(type, 2);
    le(1, 4);
    le(value, 4);
  };
  entry(256, 4, w);                                   // ImageWidth, LONG
  entry(257, 4, h);                                   // ImageLength
  entry(258, 3, 8);                                   // BitsPerSample
  entry(259, 3, 1);                                   // Compression: none
  entry(262, 3, 1);                                   // Photometric: black is zero
  entry(273, 4, data);                                // StripOffsets
  entry(277, 3, 1);                                   // SamplesPerPixel
  entry(278, 4, h);                                   // RowsPerStrip
  entry(279, 4, static_cast<uint32_t>(strip_bytes));  // StripByteCounts
  le(0, 4);                                           // no next IFD
  return s + std::string(strip_bytes, '\3');
}

TEST(NaturalImageChecks, TiffsDeclaringHugeSizesAreRefusedBeforeAllocation) {
  test::TempDir d("tif");
  write(d / "ok.tif", tiff(7, 5, 35));
  EXPECT_EQ(io::read_image(d / "ok.tif").to_double(), std::vector<double>(35, 3.0));
  write(d / "case.tif", tiff(40000, 40000, 35));
  expect_read_refused(d / "case.tif", "declares 1600000000 pixels; medseg reads 2D images of up to 67108864");
  write(d / "cut.tif", tiff(7, 5, 35).substr(0, 60));
  EXPECT_THROW(io::read_image(d / "cut.tif"), FileError);
}

// Through the CLIs that read a 2D dataset: one line naming the file, never libpng's abort (exit 134),
// within 1.5 GB and 30 s.
TEST(NaturalImageChecks, CommandsRefuseBrokenPngsWithOneLine) {
  test::TempDir d("pngds");
  const std::string raw = d / "raw/Dataset902_Png";
  fs::create_directories(raw + "/imagesTr");
  fs::create_directories(raw + "/labelsTr");
  write_json(raw + "/dataset.json", {{"channel_names", {{"0", "gray"}}},
                                     {"labels", {{"background", 0}, {"fg", 1}}},
                                     {"numTraining", 2},
                                     {"file_ending", ".png"}});
  for (const char* c : {"case_000", "case_001"}) {
    write(raw + "/imagesTr/" + c + "_0000.png", gray_png(16, 8));
    write(raw + "/labelsTr/" + c + ".png", gray_png(16, 8));
  }
  const std::string env = "MEDSEG_RAW=" + (d / "raw") + " MEDSEG_PREPROCESSED=" + (d / "pp");
  const auto bounded = [&](const std::string& app, const std::string& args) {
    return test::run_cli("/usr/bin/prlimit",
                         "--as=1500000000 -- timeout 30 " + test::bin_dir() + "/" + app + " " + args, env);
  };
  ASSERT_EQ(bounded("medseg_verify_dataset", "-d 902").exit_code, 0);
  // medseg_make_dataset writes a PNG dataset too (issue 42: --2d --file-ending .png failed on float pixels).
  auto made = bounded("medseg_make_dataset", "-d 903 --2d --file-ending .png --cases 2 --test-cases 0");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  made = bounded("medseg_verify_dataset", "-d 903");
  EXPECT_EQ(made.exit_code, 0) << made.output;
  for (const auto& [name, bytes] :
       std::vector<std::pair<std::string, std::string>>{{"cut", gray_png(16, 8).substr(0, 20)},
                                                        {"bomb", gray_png(16000, 16000)},
                                                        {"width 0", broken_pngs()[3].bytes}}) {
    SCOPED_TRACE(name);
    write(raw + "/imagesTr/case_001_0000.png", bytes);
    const auto before = test::snapshot(d.path());
    for (const char* app : {"medseg_verify_dataset", "medseg_extract_fingerprint"}) {
      const auto r = bounded(app, "-d 902");
      EXPECT_NE(r.exit_code, 134) << r.output;
      if (std::string(app) == "medseg_verify_dataset") {
        EXPECT_NE(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("case_001_0000.png"), std::string::npos) << r.output;
      } else {
        test::expect_refused(r, app, {"case_001_0000.png"});
      }
      EXPECT_EQ(test::snapshot_diff(before, test::snapshot(d.path())), "");
    }
  }
}

}  // namespace

namespace {

// Issue 42: medseg_verify_dataset said OK for an RGBA image in a one-channel PNG set (fingerprinting then
// refused it), and flagged a valid 3D TIFF set's spacing sidecars as unexpected files.
TEST(NaturalImageChecks, VerifyCountsChannelsAndKnowsTiffSidecars) {
  test::TempDir d("verify2d");
  const std::string env = "MEDSEG_RAW=" + (d / "raw");
  auto r = test::run_cli("medseg_make_dataset",
                         "-o " + (d / "raw") +
                             " -d 904 --2d --file-ending .png --cases 2 "
                             "--test-cases 0",
                         env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string image = d / "raw/Dataset904_Synthetic/imagesTr/case_001_0000.png";
  const Volume gray = io::read_image(image);
  libpng_write(image, static_cast<int>(gray.shape()[2]), static_cast<int>(gray.shape()[1]), PNG_COLOR_TYPE_RGB_ALPHA, 8,
               false);
  r = test::run_cli("medseg_verify_dataset", "-d 904", env);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("case_001_0000.png: case 'case_001' holds 4 channel(s)"), std::string::npos) << r.output;

  r = test::run_cli("medseg_make_dataset", "-o " + (d / "raw") + " -d 905 --file-ending .tif --cases 2 --test-cases 0",
                    env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(d / "raw/Dataset905_Synthetic/imagesTr/case_000_0000.json"));
  r = test::run_cli("medseg_verify_dataset", "-d 905", env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
