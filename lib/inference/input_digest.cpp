#include "inference/input_digest.h"

#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/file_digest.h"

namespace fs = std::filesystem;

namespace medseg::inference {

std::vector<std::string> input_digests(const std::vector<CaseInput>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases) {
    std::string line = c.id;
    for (const auto& f : c.files) {
      line += " " + fs::path(f).filename().string() + ":";
      try {
        const FileDigest d = file_digest(f);
        char hex[17];
        std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(d.hash));
        line += std::to_string(d.bytes) + ":" + hex;
      } catch (const Error&) { line += "unreadable"; }
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace medseg::inference
