// medseg_predict's flags and model-folder files that gave wrong results or ran without bound (issue 26):
// a -step_size outside (0, 1] (NaN included) is refused once, naming the flag, before the model loads;
// a step so small that the tile list cannot fit memory fails the case with the memory check's message
// instead of allocating without bound; a fold given twice (which weighed it double) is refused; a
// postprocessing.json step for a label dataset.json does not declare, and a plans previous_stage that
// is no folder name, are refused naming the file. Nothing is created or changed anywhere (the whole
// workspace is compared before and after).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "support/bad_input.h"

namespace fs = std::filesystem;
using namespace medseg;
using medseg::test::Workspace;

namespace {

std::string predict_args(const Workspace& ws, const std::string& extra) {
  return "-m " + ws.model() + " -i " + ws.raw() + "/imagesTs -o " + (ws / "out") +
         " --disable_progress_bar --disable_tta --tile_batch 1 --threads 1 --npp 0 --nps 0 " + extra;
}

// The checkpoint cut in half: a run that loaded the model first would fail naming it instead.
void truncate_checkpoint(const Workspace& ws) {
  const std::string ck = ws.model() + "/fold_0/checkpoint_final.ckpt";
  const std::string bytes = test::read_text(ck);
  write_file_atomic(ck, bytes.substr(0, bytes.size() / 2));
}

struct FlagsRow {
  std::string name;
  std::function<std::string(const Workspace&)> prepare;  // edits the row's copy, returns the extra arguments
  std::vector<std::string> fragments;
};

}  // namespace

TEST(BadInputPredictFlags, RefusedOnceNamingTheFlagOrFileAndWritingNothing) {
  const auto step = [](const std::string& value) {
    return FlagsRow{"-step_size " + value,
                    [value](const Workspace& ws) {
                      truncate_checkpoint(ws);
                      return "-step_size " + value;
                    },
                    {"-step_size " + value + " is not in (0, 1]"}};
  };
  const std::vector<FlagsRow> rows = {
      step("0"),
      step("-0.5"),
      step("1.5"),
      step("nan"),
      step("inf"),
      {"-f 0 0", [](const Workspace&) { return std::string("-f 0 0"); }, {"-f 0 0: fold 0 is given twice"}},
      {"-f 0 00", [](const Workspace&) { return std::string("-f 0 00"); }, {"-f 0 00: fold 0 is given twice"}},
      {"postprocessing.json for an undeclared label",
       [](const Workspace& ws) {
         write_json(ws.model() + "/postprocessing.json",
                    {{"postprocessing_fns", {"remove_all_but_largest_component_from_segmentation"}},
                     {"postprocessing_kwargs", {{{"labels_or_regions", 77}}}}});
         return std::string();
       },
       {"postprocessing.json: step 0 keeps label 77, which dataset.json does not declare"}},
      {"postprocessing.json label beyond int",
       [](const Workspace& ws) {
         write_json(ws.model() + "/postprocessing.json",
                    {{"postprocessing_fns", {"remove_all_but_largest_component_from_segmentation"}},
                     {"postprocessing_kwargs", {{{"labels_or_regions", 4294967297LL}}}}});
         return std::string();
       },
       {"postprocessing.json: postprocessing_kwargs[0].labels_or_regions is 4294967297"}},
      {"plans previous_stage reaching out",
       [](const Workspace& ws) {
         test::edit_json(ws.model() + "/plans.json",
                         [](json& j) { j["configurations"]["3d_fullres"]["previous_stage"] = "../../outside/x"; });
         return std::string();
       },
       {"plans.json", "previous_stage '../../outside/x' is not a valid name"}},
  };
  const Workspace base({false, true});
  for (const FlagsRow& row : rows) {
    SCOPED_TRACE(row.name);
    const Workspace ws = base.copy();
    const std::string extra = row.prepare(ws);
    const auto before = test::snapshot(ws.root());
    const auto r = ws.run("medseg_predict", predict_args(ws, extra));
    test::expect_refused(r, "medseg_predict", row.fragments);
    EXPECT_EQ(test::snapshot_diff(before, test::snapshot(ws.root())), "") << r.output;
  }
}

// -step_size 1e-9 is in (0, 1], but tiles an image larger than the patch ~1.5e9 times per axis: the
// tile list (21 GB and then the OOM killer, before) is refused by the memory check, naming the tiles
// and the limit. The virtual-memory cap keeps a regression from taking the machine down.
TEST(BadInputPredictFlags, TinyStepSizeIsBoundedByTheMemoryCheck) {
  const Workspace ws({false, true});
  // One case larger than the 16^3 patch.
  const auto made =
      ws.run("medseg_make_dataset", "-o " + (ws / "big") + " -d 902 --cases 1 --min-shape 40 40 40 --np 1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string input = ws / "big/Dataset902_Synthetic/imagesTr";
  const auto r = test::run_cli("medseg_predict",
                               "-m " + ws.model() + " -i " + input + " -o " + (ws / "out") +
                                   " --disable_progress_bar --disable_tta --tile_batch 1 --threads 1 --npp 0 --nps 0 "
                                   "-step_size 1e-9",
                               "ulimit -v 8388608; " + ws.env() + " MEDSEG_MEMORY_LIMIT_GIB=4");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("case_000: prediction: sliding window: the list of"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tiles (step_size 1e-09 over an image of ["), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("more than the 4.0 GiB of MEDSEG_MEMORY_LIMIT_GIB (a larger -step_size makes fewer tiles)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(ws / "out/case_000.nii.gz"));
}

// Issue 42: -npp or -nps 3000 aborted when a thread could not be made ("terminate called without an active
// exception"), and -threads 3000 spun for minutes. Each is bounded at 4 per core, refused naming the flag.
TEST(BadInputPredictFlags, ThreadCountsBeyondTheMachinesBoundAreRefused) {
  const Workspace ws({false, true});
  for (const std::string flag : {"--npp", "--nps", "--threads"}) {
    SCOPED_TRACE(flag);
    std::string args = "-m " + ws.model() + " -i " + ws.raw() + "/imagesTs -o " + (ws / "out") +
                       " --disable_progress_bar --disable_tta";
    for (const std::string f : {"--npp", "--nps", "--threads"}) args += " " + f + (f == flag ? " 3000" : " 1");
    const auto r = test::run_cli(
        "/usr/bin/prlimit", "--as=4000000000 -- timeout 60 " + test::bin_dir() + "/medseg_predict " + args, ws.env());
    test::expect_refused(r, "medseg_predict", {"-" + flag.substr(2) + " 3000: more than this machine's bound of"});
    EXPECT_FALSE(fs::exists(ws / "out"));
  }
}
