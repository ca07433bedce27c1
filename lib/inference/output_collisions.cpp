#include "inference/output_collisions.h"

#include <sys/stat.h>

#include <map>
#include <optional>
#include <utility>

#include "core/error.h"

namespace medseg::inference {

namespace {

// A file's identity: the same (device, inode) is the same file, whatever path leads to it. An
// output that does not exist yet cannot be an existing input.
using FileId = std::pair<dev_t, ino_t>;

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

}  // namespace

void refuse_overwriting_inputs(const std::vector<CaseInput>& inputs, const std::vector<CaseInput>& cases,
                               const RunOptions& o, const std::vector<std::string>& more_outputs) {
  std::map<FileId, std::string> read;
  for (const CaseInput& c : inputs)
    for (const std::string& f : c.files)
      if (const auto id = file_id(f)) read.emplace(*id, f);
  const auto check = [&](const std::string& out, const std::string& what) {
    const auto id = file_id(out);
    const auto hit = id ? read.find(*id) : read.end();
    if (hit == read.end()) return;
    throw FileError(hit->second, "this input would be overwritten by " + what + " (" + out +
                                     "); write to another -o folder, or name the inputs CASE_0000" + o.file_ending);
  };
  for (const CaseInput& c : cases) {
    if (!c.error.empty()) continue;  // writes nothing
    for (const std::string& out : output_files(o.output_folder, c.id, segmentation_ending(c, o), o.save_probabilities,
                                               o.overlays, o.probabilities_npy, o.probabilities_npz))
      check(out, "the prediction of case '" + c.id + "'");
  }
  for (const std::string& out : more_outputs) check(out, "an output file");
}

}  // namespace medseg::inference
