#include "inference/case_inputs.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>

#include "core/error.h"
#include "core/strings.h"
#include "io/image_folder.h"
#include "io/dicom_series.h"
#include "io/dicom_zip.h"
#include "io/image_formats.h"
#include "io/image_io.h"

namespace fs = std::filesystem;

namespace medseg::inference {

namespace {

// A file named exactly like the ending (".nii.gz") has no case name and is not an input.
bool named_with_ending(const std::string& name, const std::string& ending) {
  return name.size() > ending.size() && ends_with(name, ending);
}

struct Scanned {
  std::map<int, std::vector<std::string>> channels;  // channel -> files (several = conflict)
  std::vector<std::string> plain;                    // files without _XXXX
};

void add_file(std::map<std::string, Scanned>& cases, const fs::path& p, const std::string& ending) {
  static const std::regex re("^(.+)_(\\d{4})$");
  const std::string name = p.filename().string();
  std::string stem = name;
  if (named_with_ending(name, ending)) {
    stem = name.substr(0, name.size() - ending.size());
  } else {
    const auto dot = name.find('.');
    stem = dot == std::string::npos ? name : name.substr(0, dot);
  }
  std::smatch m;
  if (std::regex_match(stem, m, re))
    cases[m[1].str()].channels[std::stoi(m[2].str())].push_back(p.string());
  else
    cases[stem].plain.push_back(p.string());
}

// A DICOM case (io::dicom_case_channels): a series folder, or a folder of channel series folders, is the
// case named after the folder. False when `dir` is neither.
bool add_dicom_case(std::map<std::string, Scanned>& cases, const fs::path& dir) {
  const std::map<int, std::string> channels = io::dicom_case_channels(dir.string());
  if (channels.empty()) return false;
  Scanned& s = cases[dir.filename().string()];
  if (channels.size() == 1 && channels.begin()->second == dir.string()) {
    s.plain.push_back(dir.string());
    return true;
  }
  for (const auto& [k, folder] : channels) s.channels[k].push_back(folder);
  return true;
}

// A DICOM case's inputs are its series' files too: no output may overwrite one (-o inside a series folder).
void add_series_files(std::vector<std::string>& files) {
  const std::size_t n = files.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!fs::is_directory(files[i])) continue;
    for (const auto& e : fs::directory_iterator(files[i]))
      if (e.is_regular_file()) files.push_back(e.path().string());
  }
}

std::string channel_name(const std::string& id, int c, const std::string& ending) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "_%04d", c);
  return id + buf + ending;
}

// The channels in a case's files when one file may hold several (an RGB .png: io/image_formats.h), as the
// case listing counts them (io::files_holding_channels); a file beyond those is an error too. "" when they
// hold the model's n channels, else what is wrong, naming the file.
std::string multi_channel_images(const std::string& id, const Scanned& s, const std::string& ending, int n,
                                 std::vector<std::string>& images) {
  std::map<int, std::string> first;  // a channel given twice was refused before
  for (const auto& [k, files] : s.channels) first.emplace(k, files[0]);
  const std::string folder = fs::path(first.begin()->second).parent_path().string();
  try {
    images = io::files_holding_channels(id, first, folder, ending, n, "the model takes");
  } catch (const FileError& e) { return e.what(); }
  if (images.size() != s.channels.size())
    return concat(first.rbegin()->second, ": case '", id, "' has ", s.channels.size(), " files; its first ",
                  images.size(), " hold the ", n, " channel(s) the model takes");
  return "";
}

// A case given as one file without a channel suffix: fine for a one-channel model, else why not.
std::string plain_file_error(const std::string& id, const Scanned& s, const std::string& ending, int n) {
  if (n != 1)
    return concat(s.plain[0], ": a file without the _XXXX channel suffix, but the model takes ", n,
                  " channels (name them ", channel_name(id, 0, ending), ", ...)");
  if (s.plain.size() > 1 || !s.channels.empty())
    return concat(s.plain[0], ": case '", id, "' is given more than once (as ", s.plain[0], " and ",
                  s.plain.size() > 1 ? s.plain[1] : s.channels.begin()->second[0], ")");
  return "";
}

// A channel given twice, or one the model does not take; "" when there is none.
std::string channel_error(const std::string& id, const Scanned& s, int n) {
  for (const auto& [k, files] : s.channels) {
    if (files.size() > 1)
      return concat(files[1], ": channel ", k, " of case '", id, "' is given twice (also ", files[0], ")");
    if (k >= n) return concat(files[0], ": case '", id, "' has channel ", k, " but the model takes ", n, " channel(s)");
  }
  return "";
}

// The case's files in channel order 0..n-1, or the first missing channel as the error.
void channels_in_order(CaseInput& c, const Scanned& s, const std::string& ending, int n) {
  for (int k = 0; k < n; ++k) {
    auto it = s.channels.find(k);
    if (it == s.channels.end()) {
      const std::string& some = s.channels.begin()->second[0];
      const fs::path expected = fs::path(some).parent_path() / channel_name(c.id, k, ending);
      c.error = concat(expected.string(), ": missing channel ", k, " of case '", c.id, "' (the model takes ", n,
                       " channel(s))");
      c.images.clear();
      return;
    }
    c.images.push_back(it->second[0]);
  }
}

CaseInput make_case(const std::string& id, const Scanned& s, const std::string& ending, int n) {
  CaseInput c;
  c.id = id;
  const bool multi = io::multi_channel_ending(ending) && io::image_io_available();
  const bool one_plain_file = s.plain.size() == 1 && s.channels.empty();
  if ((multi && one_plain_file && n > 1 && io::image_file_channels(s.plain[0]) == n) ||  // one RGB file: all channels
      (one_plain_file && io::is_zip_file(s.plain[0]))) {  // a zipped DICOM case: counted once extracted
    c.images = s.plain;
    return c;
  }
  if (!s.plain.empty()) {
    c.error = plain_file_error(id, s, ending, n);
    if (c.error.empty()) c.images = s.plain;
    return c;
  }
  c.error = channel_error(id, s, n);
  if (!c.error.empty()) return c;
  if (!multi) {
    channels_in_order(c, s, ending, n);
    return c;
  }
  c.error = multi_channel_images(id, s, ending, n, c.images);
  if (!c.error.empty()) c.images.clear();
  return c;
}

// One input path: a DICOM series folder (one case), a folder of cases (files, zipped DICOM cases and series
// folders) or one file.
void scan_input(std::map<std::string, Scanned>& cases, const std::string& in, const std::string& ending) {
  if (io::is_dicom_folder(in)) {
    fs::path dir(in);
    if (dir.filename().empty()) dir = dir.parent_path();  // "series/": the case is named "series"
    add_dicom_case(cases, dir);
    return;
  }
  if (fs::is_regular_file(in)) return add_file(cases, in, ending);
  MEDSEG_CHECK_FILE(fs::is_directory(in), in, "input not found");
  for (const auto& e : fs::directory_iterator(in)) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.') continue;
    if (e.is_directory()) add_dicom_case(cases, e.path());
    if (!e.is_regular_file()) continue;
    // Files with the ending, and zipped DICOM cases (inference/zipped_cases.h).
    if (named_with_ending(name, ending) || io::is_zip_file(e.path().string())) add_file(cases, e.path(), ending);
  }
}

// The case's input, or its error (a header that cannot be read while counting channels); with every file it names.
CaseInput case_input(const std::string& id, const Scanned& s, const std::string& ending, int n) {
  CaseInput c;
  try {
    c = make_case(id, s, ending, n);
  } catch (const std::exception& e) {
    c = CaseInput();
    c.id = id;
    c.error = e.what();
  }
  c.files = s.plain;
  for (const auto& [k, files] : s.channels) c.files.insert(c.files.end(), files.begin(), files.end());
  add_series_files(c.files);
  return c;
}

}  // namespace

std::vector<CaseInput> collect_case_inputs(const std::vector<std::string>& inputs, const std::string& ending,
                                           int num_channels) {
  std::map<std::string, Scanned> cases;
  for (const std::string& in : inputs) scan_input(cases, in, ending);
  MEDSEG_CHECK(!cases.empty(), "no input images ending in '", ending, "' and no DICOM series folders found");
  std::vector<CaseInput> out;
  for (const auto& [id, s] : cases) out.push_back(case_input(id, s, ending, num_channels));
  return out;
}

void check_part(int num_parts, int part_id) {
  MEDSEG_CHECK(num_parts >= 1, "-num_parts must be >= 1 (got ", num_parts, ")");
  MEDSEG_CHECK(part_id >= 0 && part_id < num_parts, "-part_id must be in 0..", num_parts - 1, " for -num_parts ",
               num_parts, " (got ", part_id, "; part ids count from 0)");
}

void attach_previous_stage(std::vector<CaseInput>& cases, const std::string& folder, const std::string& file_ending) {
  MEDSEG_CHECK_FILE(fs::is_directory(folder), folder, "previous-stage predictions folder not found");
  for (CaseInput& c : cases) {
    const std::string file = (fs::path(folder) / (c.id + file_ending)).string();
    if (!fs::exists(file)) {
      if (c.error.empty()) c.error = "previous-stage prediction " + file + " not found";
      continue;
    }
    c.previous_stage = file;
    c.files.push_back(file);
  }
}

std::vector<CaseInput> select_part(const std::vector<CaseInput>& cases, int num_parts, int part_id) {
  check_part(num_parts, part_id);
  std::vector<CaseInput> mine;
  for (std::size_t i = static_cast<std::size_t>(part_id); i < cases.size(); i += static_cast<std::size_t>(num_parts))
    mine.push_back(cases[i]);
  return mine;
}

}  // namespace medseg::inference
