#pragma once
// An output that is, contains or lies inside an input would be deleted or overwritten by the very
// command reading it (`--overwrite` replaces the output folder as a whole). Every command that takes
// both checks them apart before it writes anything.
#include <string>

namespace medseg {

// "" when `output` and `input` are apart, else how they overlap: "is the <what> itself",
// "lies inside the <what> (INPUT)" or "contains the <what> (INPUT)". Both are compared after making
// them absolute and resolving symbolic links and "..", as far as they exist.
std::string path_overlap_problem(const std::string& output, const std::string& input, const std::string& what);

// Throws FileError(output, "<problem>; choose an output outside it") when path_overlap_problem finds one.
void check_output_apart(const std::string& output, const std::string& input, const std::string& what);

// Whether `path` is `folder` or lies inside it, compared as path_overlap_problem compares them.
bool is_same_or_inside(const std::string& path, const std::string& folder);

}  // namespace medseg
