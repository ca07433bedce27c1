#pragma once
// Names that become one component of a path, checked where they are read (docs/conventions.md, "Names
// that become paths"): nothing is ever written outside the folders the user gave.
#include <string>
#include <vector>

namespace medseg {

// A fold as nnU-Net takes it: "all" or a non-negative integer (int(fold)); returns the folder's
// spelling ("all", or the number without leading zeros: "007" -> "7"). Throws Error naming the value
// for anything else ("-3", "abc", "1.5", "../x", empty), before it becomes a fold_K folder.
std::string parse_fold(const std::string& fold);

// parse_fold for every fold of a list, refusing a fold given twice ("0 0 1", or "0 00"), which
// would count double in an ensemble or a cross-validation. `flag` names the option in errors
// ("-f"): Error("-f 0 0 1: fold 0 is given twice").
std::vector<std::string> parse_folds(const std::vector<std::string>& folds, const std::string& flag);

// Names that become one component of a path (plans, configuration and dataset names, data
// identifiers, trainer names, folds, case ids): "" when `value` is one, else why it is not (empty,
// "." or "..", a '/' or '\\', a control character such as NUL, more than 255 bytes). Checked where
// the name is read, so nothing is ever written outside the folders the user gave.
std::string path_component_problem(const std::string& value);

// Throws FileError(file, "<what> '<value>' is not a valid name (<why>)"), or Error when `file` is
// empty (a command-line value), unless path_component_problem(value) is "".
void check_path_component(const std::string& value, const std::string& what, const std::string& file = "");

// `value` with control characters and bytes that are not UTF-8 written as \xNN, for messages (valid UTF-8,
// such as "Müller", stays as it is).
std::string printable(const std::string& value);

}  // namespace medseg
