// The ITK-free half of io/image_formats.h: families by name and the TIFF spacing sidecar.
#include "io/image_formats.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>

#include "core/error.h"
#include "core/json_io.h"
#include "core/strings.h"

namespace fs = std::filesystem;

namespace medseg::io {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The file name without its (single) extension: "a_0000.tif" -> "a_0000".
std::string tiff_stem(const std::string& path) { return fs::path(path).stem().string(); }

}  // namespace

ImageFamily image_family(const std::string& path) {
  const std::string n = lower(fs::path(path).filename().string());
  if (ends_with(n, ".png") || ends_with(n, ".bmp")) return ImageFamily::Natural2D;
  if (ends_with(n, ".tif") || ends_with(n, ".tiff")) return ImageFamily::Tiff;
  return ImageFamily::Medical;
}

bool multi_channel_ending(const std::string& file_ending) {
  const std::string e = lower(file_ending);
  return e == ".png" || e == ".bmp" || e == ".tif";
}

bool tiff_planar_separate(const std::string& path) {
  if (image_family(path) != ImageFamily::Tiff) return false;  // a color PNG or BMP is not opened again
  std::ifstream f(path, std::ios::binary);
  unsigned char h[8];
  if (!f.read(reinterpret_cast<char*>(h), 8)) return false;
  const bool little = h[0] == 'I' && h[1] == 'I';
  if (!little && !(h[0] == 'M' && h[1] == 'M')) return false;
  auto u16 = [&](const unsigned char* b) { return little ? b[0] | b[1] << 8 : b[0] << 8 | b[1]; };
  auto u32 = [&](const unsigned char* b) {
    return little ? uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24
                  : uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
  };
  if (u16(h + 2) != 42) return false;  // BigTIFF (43) is left to ITK's reading as it is
  unsigned char n[2];
  if (!f.seekg(u32(h + 4)) || !f.read(reinterpret_cast<char*>(n), 2)) return false;
  for (int i = 0, count = u16(n); i < count; ++i) {
    unsigned char e[12];  // tag, type, count, value (a SHORT value sits in the first two bytes)
    if (!f.read(reinterpret_cast<char*>(e), 12)) return false;
    if (u16(e) == 284) return u16(e + 8) == 2;  // PlanarConfiguration
  }
  return false;
}

std::string tiff_sidecar_for(const std::string& tiff_path) {
  const fs::path dir = fs::path(tiff_path).parent_path();
  const std::string stem = tiff_stem(tiff_path);
  std::error_code ec;
  const fs::path own = dir / (stem + ".json");
  if (fs::is_regular_file(own, ec)) return own.string();
  static const std::regex channel("^(.+)_\\d{4}$");
  std::smatch m;
  if (std::regex_match(stem, m, channel)) {
    const fs::path of_case = dir / (m[1].str() + ".json");
    if (fs::is_regular_file(of_case, ec)) return of_case.string();
  }
  return "";
}

std::array<double, 3> read_tiff_sidecar(const std::string& json_path) {
  const json j = read_json(json_path);
  MEDSEG_CHECK_FILE(j.is_object() && j.contains("spacing"), json_path,
                    "a TIFF spacing file must be an object with \"spacing\": [z, y, x]");
  const json& s = j.at("spacing");
  MEDSEG_CHECK_FILE(s.is_array() && s.size() == 3, json_path, "\"spacing\" must list 3 numbers (z, y, x), got ",
                    s.dump());
  std::array<double, 3> zyx{};
  for (size_t i = 0; i < 3; ++i) {
    MEDSEG_CHECK_FILE(s[i].is_number(), json_path, "\"spacing\" must list numbers, got ", s.dump());
    zyx[i] = s[i].get<double>();
    MEDSEG_CHECK_FILE(std::isfinite(zyx[i]) && zyx[i] > 0, json_path, "\"spacing\" values must be positive, got ",
                      s.dump());
  }
  return {zyx[2], zyx[1], zyx[0]};
}

void write_tiff_sidecar(const std::string& tiff_path, const std::array<double, 3>& spacing_xyz) {
  const fs::path p = fs::path(tiff_path).parent_path() / (tiff_stem(tiff_path) + ".json");
  write_json(p.string(), json{{"spacing", {spacing_xyz[2], spacing_xyz[1], spacing_xyz[0]}}});
}

}  // namespace medseg::io
