#pragma once
// Helpers for the bad-input tables (tests/*/bad_input_*_test.cpp): a small trained-layout workspace
// made once per test with the real CLIs, a fresh copy of it per table row, file snapshots that
// prove nothing was created or changed anywhere, and the check that a CLI refused with one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/json_io.h"
#include "support/test_support.h"

namespace medseg::test {

// Every file and folder under `root` with its size and modification time.
inline std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> snapshot(const std::string& root) {
  namespace fs = std::filesystem;
  std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string rel = fs::relative(e.path(), root).string();
    out[rel] = {e.is_regular_file() ? e.file_size() : 0, e.last_write_time()};
  }
  return out;
}

// What appeared, vanished or changed between two snapshots, for failure messages ("" = nothing).
template <class Snap>
std::string snapshot_diff(const Snap& before, const Snap& after) {
  std::string d;
  for (const auto& [p, v] : after) {
    auto it = before.find(p);
    if (it == before.end())
      d += "  created " + p + "\n";
    else if (it->second != v)
      d += "  changed " + p + "\n";
  }
  for (const auto& [p, v] : before)
    if (!after.count(p)) d += "  removed " + p + "\n";
  return d;
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The CLI refused: non-zero exit, exactly one "<app>: error: ..." line holding every fragment, and no
// line of a C++ backtrace anywhere in the output.
inline void expect_refused(const CmdResult& r, const std::string& app, const std::vector<std::string>& fragments) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  std::vector<std::string> errors;
  for (const auto& l : lines_of(r.output)) {
    if (l.rfind(app + ": error: ", 0) == 0) errors.push_back(l);
    EXPECT_EQ(l.find("Exception raised from"), std::string::npos) << r.output;
    EXPECT_EQ(l.find("frame #"), std::string::npos) << r.output;
  }
  ASSERT_EQ(errors.size(), 1u) << r.output;
  for (const auto& f : fragments)
    EXPECT_NE(errors[0].find(f), std::string::npos) << "missing '" << f << "' in: " << errors[0];
}

inline void edit_json(const std::string& path, const std::function<void(json&)>& edit) {
  json j = read_json(path);
  edit(j);
  write_json(path, j);
}

// A workspace as a user has it after the nnU-Net workflow, built with the CLIs:
//   raw/Dataset901_Synthetic   5 training cases (16^3) and 1 test case
//   pp/Dataset901_Synthetic    fingerprint, nnUNetPlans.json, nnUNetPlans_3d_fullres/ (preprocessed)
//   res/Dataset901_Synthetic/nnUNetTrainer__nnUNetPlans__3d_fullres/fold_0   (untrained weights)
//   outside/sentinel.txt       a folder beside the roots that no command may touch
// Each table row works on its own copy (copy()), so rows cannot affect each other.
class Workspace {
 public:
  struct Parts {
    bool preprocess = true, model = true;
  };
  explicit Workspace(Parts parts) : Workspace(parts, nullptr) {}
  Workspace() : Workspace(Parts{}, nullptr) {}

  // A fresh copy of the workspace made by the constructor.
  Workspace copy() const { return Workspace(Parts{}, this); }

  const std::string& root() const { return dir_.path(); }
  std::string operator/(const std::string& rel) const { return dir_ / rel; }
  std::string raw() const { return dir_ / "raw/Dataset901_Synthetic"; }
  std::string pp() const { return dir_ / "pp/Dataset901_Synthetic"; }
  std::string plans() const { return pp() + "/nnUNetPlans.json"; }
  std::string model() const { return dir_ / "res/Dataset901_Synthetic/nnUNetTrainer__nnUNetPlans__3d_fullres"; }
  std::string env() const {
    return "MEDSEG_RAW=" + (dir_ / "raw") + " MEDSEG_PREPROCESSED=" + (dir_ / "pp") +
           " MEDSEG_RESULTS=" + (dir_ / "res") + " MEDSEG_NUM_THREADS=1";
  }
  CmdResult run(const std::string& app, const std::string& args) const { return run_cli(app, args, env()); }

 private:
  Workspace(Parts parts, const Workspace* from) : dir_("badinput") {
    namespace fs = std::filesystem;
    if (from) {
      fs::copy(from->root(), root(), fs::copy_options::recursive);
      return;
    }
    fs::create_directories(dir_ / "outside");
    std::ofstream(dir_ / "outside/sentinel.txt") << "must stay alone\n";
    must(run(
        "medseg_make_dataset",
        "-o " + (dir_ / "raw") + " -d 901 --cases 5 --test-cases 1 --min-shape 16 16 16 --max-shape 16 16 16 --np 1"));
    must(run("medseg_plan_and_preprocess",
             std::string("-d 901 -c 3d_fullres -np 1 --npfp 1 --no-progress") + (parts.preprocess ? "" : " --no_pp")));
    if (parts.preprocess) {  // the splits a first training run writes, so that a refused run has none to write
      json splits = json::array();
      for (int f = 0; f < 5; ++f) {
        json train = json::array();
        for (int c = 0; c < 5; ++c)
          if (c != f) train.push_back("case_00" + std::to_string(c));
        splits.push_back({{"train", train}, {"val", {"case_00" + std::to_string(f)}}});
      }
      write_json(dir_ / "pp/Dataset901_Synthetic/splits_final.json", splits);
    }
    if (parts.model) must(run("medseg_init_model", "-d 901 -c 3d_fullres -f 0"));
  }
  static void must(const CmdResult& r) {
    if (r.exit_code != 0) throw std::runtime_error("workspace setup failed: " + r.output);
  }

  TempDir dir_;
};

}  // namespace medseg::test
