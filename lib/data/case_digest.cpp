#include "data/case_digest.h"

#include <cstdio>
#include <filesystem>

#include "core/file_digest.h"

namespace fs = std::filesystem;

namespace medseg::data {

std::vector<std::string> case_digests(const CaseSource& source, const std::string& folder) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < source.size(); ++i) {
    const std::string id = source.id(i);
    const Shape3 s = source.shape(i);
    std::string line = id + " " + std::to_string(source.channels()) + "x" + std::to_string(s[0]) + "x" +
                       std::to_string(s[1]) + "x" + std::to_string(s[2]);
    for (const char* suffix : {".npy", "_seg.npy", ".json"}) {
      const FileDigest d = file_digest((fs::path(folder) / (id + suffix)).string());
      char hex[17];
      std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(d.hash));
      line += std::string(" ") + suffix + ":" + std::to_string(d.bytes) + ":" + hex;
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace medseg::data
