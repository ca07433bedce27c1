#include "core/path_overlap.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg {
namespace {

fs::path resolved(const std::string& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
  if (ec) r = fs::absolute(p).lexically_normal();
  // "a/b/" and "a/b" are one folder: weakly_canonical keeps the trailing separator as an empty part.
  if (!r.has_filename() && r.has_parent_path() && r != r.root_path()) r = r.parent_path();
  return r;
}

bool inside(const fs::path& path, const fs::path& folder) {
  return std::mismatch(folder.begin(), folder.end(), path.begin(), path.end()).first == folder.end();
}

}  // namespace

bool is_same_or_inside(const std::string& path, const std::string& folder) {
  return inside(resolved(path), resolved(folder));
}

std::string path_overlap_problem(const std::string& output, const std::string& input, const std::string& what) {
  const fs::path out = resolved(output), in = resolved(input);
  if (out == in) return concat("is the ", what, " itself");
  if (inside(out, in)) return concat("lies inside the ", what, " (", input, ")");
  if (inside(in, out)) return concat("contains the ", what, " (", input, ")");
  return "";
}

void check_output_apart(const std::string& output, const std::string& input, const std::string& what) {
  const std::string problem = path_overlap_problem(output, input, what);
  MEDSEG_CHECK_FILE(problem.empty(), output, problem, "; choose an output outside it");
}

}  // namespace medseg
