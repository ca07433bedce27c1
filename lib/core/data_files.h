#pragma once
// Data files medseg ships: trainer configs (configs/) and planner presets (plans/). An installed medseg
// (`cmake --install`) keeps them in <prefix>/share/medseg/, found relative to the running executable, so a
// tree moved to another prefix still finds its own; a build tree uses the source tree it was built from.
// A program that links the library from elsewhere (docs/api.md) names the folder with $MEDSEG_SHARE_DIR.
// $MEDSEG_SHARE_DIR replaces both; a user adds or overrides single files through a folder of their own.
#include <string>
#include <vector>

namespace medseg {

// $MEDSEG_SHARE_DIR/<subdir> when set; else <executable's folder>/../share/medseg/<subdir> when that
// folder exists (an installed tree); else, for a program inside the build folder, <source tree>/<subdir>
// (compiled in); else <executable's folder>/../share/medseg/<subdir> all the same (and the caller's "no such
// file" names it). A program outside the build folder never reads the source tree.
std::string shipped_data_dir(const std::string& subdir);

// The folders searched for a file of `subdir`, in order: `flag_dir` (a CLI option) if not empty, the folder
// named by the environment variable `env_var` if set, then shipped_data_dir(subdir). A user folder that does
// not exist is an error naming where it came from, so that a typo cannot silently fall back to the shipped files.
std::vector<std::string> data_search_dirs(const std::string& subdir, const std::string& env_var,
                                          const std::string& flag_dir = "", const std::string& flag_name = "");

// <dir>/<name>.json in the first of `dirs` that has it, or "" when none does.
std::string find_named_json(const std::vector<std::string>& dirs, const std::string& name);

// The names (file stems) of the *.json files directly in `dirs`, sorted, each once.
std::vector<std::string> named_jsons(const std::vector<std::string>& dirs);

}  // namespace medseg
