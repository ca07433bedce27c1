#pragma once
// Data files medseg ships beside its sources: trainer configs (configs/) and planner presets (plans/).
// The binaries find them in the source tree they were built from (the docker image builds in
// /opt/medseg, so the same holds there); a user adds or overrides files through a folder of their own.
#include <string>
#include <vector>

namespace medseg {

// <source tree>/<subdir>, compiled in.
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
