// Names that become paths (issue 15, "escaping the data folders"): a data_identifier, plans,
// configuration, dataset, trainer or checkpoint name, a fold or a case id holding "..", "/", nothing,
// an absolute path or a control character, read from a file or given on the command line. Every CLI
// that reads such a name must refuse it with one line naming the file and key (or the flag), and
// create or change nothing: the whole workspace, a sentinel folder beside the roots included, is
// compared file by file before and after.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "support/bad_input.h"

namespace fs = std::filesystem;
using namespace medseg;
using medseg::test::Workspace;

namespace {

struct Row {
  std::string name;
  // Prepares the row's workspace copy and returns the CLI's arguments.
  std::function<std::string(const Workspace&)> prepare;
  std::vector<std::string> fragments;  // expected in the error line
};

void run_table(const std::string& app, const std::vector<Row>& rows, Workspace::Parts parts = {}) {
  const Workspace base(parts);
  for (const Row& row : rows) {
    SCOPED_TRACE(app + ": " + row.name);
    const Workspace ws = base.copy();
    const std::string args = row.prepare(ws);
    const auto before = test::snapshot(ws.root());
    const auto r = ws.run(app, args);
    test::expect_refused(r, app, row.fragments);
    EXPECT_EQ(test::snapshot_diff(before, test::snapshot(ws.root())), "") << r.output;
  }
}

void set_plans(const Workspace& ws, const std::string& pointer, const json& value, const std::string& file = "") {
  test::edit_json(file.empty() ? ws.plans() : file, [&](json& j) { j[json::json_pointer(pointer)] = value; });
}

// A copy of the plans where a hostile "-p ../../outside/evil" would find one.
void plans_outside(const Workspace& ws) { fs::copy_file(ws.plans(), ws / "outside/evil.json"); }

// One epoch of one iteration: rows that the old code accepted finish quickly.
std::string tiny_trainer(const Workspace& ws, const std::string& name = "Tiny") {
  const std::string path = ws / "tiny.json";
  write_json(path, {{"name", name},
                    {"num_epochs", 1},
                    {"iterations_per_epoch", 1},
                    {"val_iterations_per_epoch", 1},
                    {"num_workers", 0}});
  return path;
}

const char* kPreprocess = " -c 3d_fullres --np 1 --no-progress";

}  // namespace

TEST(BadInputNames, PreprocessRefusesNamesThatLeaveTheFolders) {
  const std::string id = "/configurations/3d_fullres/data_identifier";
  run_table("medseg_preprocess",
            {
                {"data_identifier ../../outside/evil",
                 [&](const Workspace& ws) {
                   set_plans(ws, id, "../../outside/evil");
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"nnUNetPlans.json",
                  "configuration '3d_fullres': data_identifier '../../outside/evil' is not a valid name"}},
                {"data_identifier a/b",
                 [&](const Workspace& ws) {
                   set_plans(ws, id, "a/b");
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"nnUNetPlans.json", "data_identifier 'a/b'", "contains '/'"}},
                {"data_identifier empty",
                 [&](const Workspace& ws) {
                   set_plans(ws, id, "");
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"nnUNetPlans.json", "data_identifier ''", "empty"}},
                {"data_identifier absolute",
                 [&](const Workspace& ws) {
                   set_plans(ws, id, ws / "outside/evil");
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"nnUNetPlans.json", "data_identifier '/"}},
                {"data_identifier with NUL",
                 [&](const Workspace& ws) {
                   set_plans(ws, id, std::string("ab\0cd", 5));
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"nnUNetPlans.json", "data_identifier 'ab\\x00cd'", "control character"}},
                {"plans_name with /",
                 [&](const Workspace& ws) {
                   set_plans(ws, "/plans_name", "x/y");
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"nnUNetPlans.json", "plans_name 'x/y'"}},
                {"dataset_name ..",
                 [&](const Workspace& ws) {
                   set_plans(ws, "/dataset_name", "..");
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"nnUNetPlans.json", "dataset_name '..'"}},
                {"configuration name ..",
                 [&](const Workspace& ws) {
                   test::edit_json(ws.plans(), [](json& j) {
                     j["configurations"][".."] = j["configurations"]["3d_fullres"];
                     j["configurations"].erase("3d_fullres");
                   });
                   return std::string("-d 901 -c .. --np 1 --no-progress");
                 },
                 {"nnUNetPlans.json", "configuration name '..'"}},
                {"--plans_name ../../outside/evil",
                 [&](const Workspace& ws) {
                   plans_outside(ws);
                   return std::string("-d 901 --plans_name ../../outside/evil") + kPreprocess;
                 },
                 {"plans name '../../outside/evil'"}},
                {"dataset.json case id ../../../outside/evil",
                 [&](const Workspace& ws) {
                   test::edit_json(ws.raw() + "/dataset.json", [](json& j) {
                     j["dataset"] = {
                         {"../../../outside/evil",
                          {{"images", {"imagesTr/case_000_0000.nii.gz"}}, {"label", "labelsTr/case_000.nii.gz"}}}};
                   });
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"dataset.json", "case id '../../../outside/evil' is not a valid name"}},
                {"case id from a file name with a control character",
                 [&](const Workspace& ws) {
                   fs::copy_file(ws.raw() + "/imagesTr/case_000_0000.nii.gz", ws.raw() +
                                                                                  "/imagesTr/bad\x01"
                                                                                  "case_0000.nii.gz");
                   fs::copy_file(ws.raw() + "/labelsTr/case_000.nii.gz", ws.raw() +
                                                                             "/labelsTr/bad\x01"
                                                                             "case.nii.gz");
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"imagesTr/bad", "case id 'bad\\x01case'", "control character"}},
                {"dataset.json file_ending with /",
                 [&](const Workspace& ws) {
                   test::edit_json(ws.raw() + "/dataset.json", [](json& j) { j["file_ending"] = ".nii.gz/../../x"; });
                   return std::string("-d 901") + kPreprocess;
                 },
                 {"dataset.json", "file_ending '.nii.gz/../../x'"}},
            },
            {false, false});
}

TEST(BadInputNames, TrainRefusesNamesThatLeaveTheFolders) {
  const auto args = [](const Workspace& ws, const std::string& conf, const std::string& fold, const std::string& more) {
    return "901 " + conf + " " + fold + " --tr " + tiny_trainer(ws) + " --threads 1 --no_pbar " + more;
  };
  run_table(
      "medseg_train",
      {
          {"-p ../../outside/evil",
           [&](const Workspace& ws) {
             plans_outside(ws);
             return args(ws, "3d_fullres", "0", "-p ../../outside/evil");
           },
           {"plans name (-p) '../../outside/evil'"}},
          {"configuration ..",
           [&](const Workspace& ws) { return args(ws, "..", "0", ""); },
           {"configuration '..' is not a valid name"}},
          {"fold ../1", [&](const Workspace& ws) { return args(ws, "3d_fullres", "../1", ""); }, {"fold", "'../1'"}},
          {"fold -3", [&](const Workspace& ws) { return args(ws, "3d_fullres", "-3", ""); }, {"fold", "'-3'"}},
          {"--tr x/../../y",
           [&](const Workspace&) { return std::string("901 3d_fullres 0 --tr x/../../y --no_pbar"); },
           {"trainer config (--tr) 'x/../../y'"}},
          {"trainer config name ../../outside/evil",
           [&](const Workspace& ws) {
             return "901 3d_fullres 0 --threads 1 --no_pbar --tr " + tiny_trainer(ws, "../../outside/evil");
           },
           {"tiny.json", "key 'name' is '../../outside/evil' (must be one file name"}},
          {"splits_final.json case id ../../outside/evil",
           [&](const Workspace& ws) {
             json splits = json::array();
             for (int f = 0; f < 5; ++f)
               splits.push_back({{"train", {"case_000", "case_001", "case_002"}}, {"val", {"../../outside/evil"}}});
             write_json(ws.pp() + "/splits_final.json", splits);
             return args(ws, "3d_fullres", "0", "");
           },
           {"splits_final.json", "'../../outside/evil', which is not in the dataset"}},
          {"plans data_identifier ../../outside/evil",
           [&](const Workspace& ws) {
             set_plans(ws, "/configurations/3d_fullres/data_identifier", "../../outside/evil");
             return args(ws, "3d_fullres", "0", "");
           },
           {"nnUNetPlans.json", "data_identifier '../../outside/evil'"}},
      },
      {true, false});
}

TEST(BadInputNames, PredictRefusesNamesThatLeaveTheFolders) {
  const auto args = [](const Workspace& ws, const std::string& more) {
    return "-i " + ws.raw() + "/imagesTs -o " + (ws / "out") + " --disable_progress_bar " + more;
  };
  run_table("medseg_predict",
            {
                {"-p ../x",
                 [&](const Workspace& ws) { return args(ws, "-d 901 -c 3d_fullres -p ../x"); },
                 {"plans name (-p) '../x'"}},
                {"--tr x/../../y",
                 [&](const Workspace& ws) { return args(ws, "-d 901 -c 3d_fullres --tr x/../../y"); },
                 {"trainer name (--tr) 'x/../../y'"}},
                {"-c ..", [&](const Workspace& ws) { return args(ws, "-d 901 -c .."); }, {"configuration (-c) '..'"}},
                {"-f ../1",
                 [&](const Workspace& ws) { return args(ws, "-d 901 -c 3d_fullres -f ../1"); },
                 {"fold", "'../1'"}},
                {"--chk ../../outside/x",
                 [&](const Workspace& ws) { return args(ws, "-d 901 -c 3d_fullres --chk ../../outside/x"); },
                 {"checkpoint name (-chk) '../../outside/x'"}},
                {"model plans.json data_identifier a/b",
                 [&](const Workspace& ws) {
                   set_plans(ws, "/configurations/3d_fullres/data_identifier", "a/b", ws.model() + "/plans.json");
                   return args(ws, "-m " + ws.model());
                 },
                 {"plans.json", "data_identifier 'a/b'"}},
                {"model dataset.json file_ending reaching out",
                 [&](const Workspace& ws) {
                   test::edit_json(ws.model() + "/dataset.json",
                                   [](json& j) { j["file_ending"] = "/../../outside/x.nii.gz"; });
                   return args(ws, "-m " + ws.model());
                 },
                 {"dataset.json", "file_ending '/../../outside/x.nii.gz'"}},
            },
            {false, true});
}

TEST(BadInputNames, PlanningRefusesNamesThatLeaveTheFolders) {
  run_table("medseg_plan_experiment",
            {
                {"--overwrite_plans_name ../../outside/evil",
                 [](const Workspace&) { return std::string("-d 901 --overwrite_plans_name ../../outside/evil"); },
                 {"plans name '../../outside/evil'"}},
                {"--dataset-name a/b",
                 [](const Workspace& ws) {
                   return "--fingerprint " + ws.pp() + "/dataset_fingerprint.json --dataset-json " + ws.raw() +
                          "/dataset.json -o " + (ws / "plans_out.json") + " --dataset-name a/b";
                 },
                 {"dataset name 'a/b'"}},
            },
            {false, false});
  run_table(
      "medseg_plan_and_preprocess",
      {
          {"--overwrite_plans_name ../../outside/evil",
           [](const Workspace&) { return std::string("-d 901 --no_pp --overwrite_plans_name ../../outside/evil"); },
           {"plans name '../../outside/evil'"}},
      },
      {false, false});
}

TEST(BadInputNames, InitModelRefusesNamesThatLeaveTheFolders) {
  run_table(
      "medseg_init_model",
      {
          {"--tr ../../outside/evil",
           [](const Workspace&) { return std::string("-d 901 -c 3d_fullres --tr ../../outside/evil"); },
           {"trainer name (--tr) '../../outside/evil'"}},
          {"-p ../../outside/evil",
           [](const Workspace& ws) {
             plans_outside(ws);
             return std::string("-d 901 -c 3d_fullres -p ../../outside/evil");
           },
           {"plans name (-p) '../../outside/evil'"}},
          {"-c ..", [](const Workspace&) { return std::string("-d 901 -c .."); }, {"configuration (-c) '..'"}},
          {"-f ../1", [](const Workspace&) { return std::string("-d 901 -c 3d_fullres -f ../1"); }, {"fold", "'../1'"}},
      },
      {false, true});
}

TEST(BadInputNames, MakeDatasetRefusesNamesThatLeaveTheRoot) {
  run_table(
      "medseg_make_dataset",
      {
          {"--name x/../../outside/evil",
           [](const Workspace& ws) { return "-o " + (ws / "raw") + " -d 902 --cases 1 --name x/../../outside/evil"; },
           {"dataset name (--name) 'x/../../outside/evil'"}},
          {"--file-ending /../x.nii.gz",
           [](const Workspace& ws) { return "-o " + (ws / "raw") + " -d 902 --cases 1 --file-ending /../x.nii.gz"; },
           {"file ending (--file-ending) '/../x.nii.gz'"}},
      },
      {false, false});
}

TEST(BadInputNames, PathComponentRule) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "it is empty"},           {".", "it is '.'"},
      {"..", "it is '..'"},          {"../x", "it contains '/'"},
      {"a/b", "it contains '/'"},    {"/tmp/x", "it contains '/'"},
      {"a\\b", "it contains '\\'"},  {std::string("a\0b", 3), "control character"},
      {"a\nb", "control character"}, {std::string(256, 'x'), "longer than 255 bytes"},
  };
  for (const auto& [value, why] : bad) {
    SCOPED_TRACE(printable(value));
    EXPECT_NE(path_component_problem(value).find(why), std::string::npos) << path_component_problem(value);
    try {
      check_path_component(value, "key 'data_identifier'", "/p/plans.json");
      ADD_FAILURE() << "accepted";
    } catch (const FileError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(
                    "/p/plans.json: key 'data_identifier' '" + printable(value) + "' is not a valid name", 0),
                0u)
          << e.what();
    }
  }
  for (const std::string& ok : std::vector<std::string>{"nnUNetPlans_3d_fullres", "Dataset004_Hippocampus", "fold_0",
                                                        "a..b", "...", "x y", std::string(255, 'x')})
    EXPECT_EQ(path_component_problem(ok), "") << ok;
  EXPECT_THROW(check_path_component("a/b", "-p"), Error);  // no file: a command-line value
}
