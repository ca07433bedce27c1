#pragma once
// Label values a label map may hold: those dataset.json declares. Anything else (an undeclared
// class, a negative value that would merge with preprocessing's "outside the image" -1) is
// refused where labels enter medseg, naming the file, instead of failing in training.
#include <string>
#include <vector>

#include "core/volume.h"

namespace medseg::io {

// The distinct values of an integer label map (read_label's Int16/Int32), sorted.
std::vector<int> distinct_label_values(const Volume& label);

// "label value(s) -1, 7 not declared in dataset.json (declared: 0, 1, 2)", or "" when every value
// of `label` is in `declared`.
std::string undeclared_labels_problem(const Volume& label, const std::vector<int>& declared);

// Throws FileError naming `file` and case `case_id` when undeclared_labels_problem finds any.
void check_label_values(const Volume& label, const std::vector<int>& declared, const std::string& file,
                        const std::string& case_id);

}  // namespace medseg::io
