// Two trainers in one process (tests today, ranks tomorrow) must not disturb each other or the
// process: each one's log goes to its own training_log.txt for as long as it lives, whatever the
// order they end in, and the thread count the process had comes back when a trainer ends.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <ATen/Parallel.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "support/test_support.h"
#include "training/run_folder.h"
#include "training/trainer.h"
#include "training/trainer_config.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

class TwoTrainers : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string env = "MEDSEG_RAW=" + dir.path() + "/raw MEDSEG_PREPROCESSED=" + dir.path() + "/pre";
    fs::create_directories(dir.path() + "/raw");
    auto r = test::run_cli("medseg_make_dataset",
                           "-d 953 -n Two --cases 5 --min-shape 8 12 12 --max-shape 8 12 12 --seed 1", env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = test::run_cli("medseg_plan_and_preprocess", "-d 953 -c 3d_fullres --np 1 --no_pbar", env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::unique_ptr<training::Trainer> trainer(const std::string& fold) {
    training::TrainerConfig cfg;
    cfg.num_epochs = 1;
    cfg.iterations_per_epoch = 1;
    cfg.val_iterations_per_epoch = 1;
    cfg.num_workers = 0;
    training::TrainOptions opt;
    opt.threads = 1;
    opt.progress_bar = false;
    auto in = training::resolve_run("953", "3d_fullres", fold, "nnUNetPlans", cfg.name, dir.path() + "/pre",
                                    dir.path() + "/results");
    return std::make_unique<training::Trainer>(std::move(in), cfg, opt);
  }
  std::string log_of(const training::Trainer& t) const {
    return test::read_text(t.fold_folder() + "/training_log.txt");
  }
  test::TempDir dir{"two_trainers"};
};

}  // namespace

TEST_F(TwoTrainers, EachKeepsItsOwnLogWhicheverEndsFirst) {
  auto a = trainer("0");
  auto b = trainer("1");
  ASSERT_EQ(a->run(), training::TrainOutcome::Finished);
  ASSERT_EQ(b->run(), training::TrainOutcome::Finished);
  const training::Trainer& b_ref = *b;
  const std::string a_folder = a->fold_folder();
  a.reset();  // the first one ends while the second lives
  spdlog::info("marker line for the trainer that is still alive");
  spdlog::default_logger()->flush();
  EXPECT_NE(log_of(b_ref).find("marker line"), std::string::npos) << "the living trainer lost its log";
  EXPECT_EQ(test::read_text(a_folder + "/training_log.txt").find("marker line"), std::string::npos)
      << "an ended trainer still receives the log";
  b.reset();
  spdlog::info("after both");
  EXPECT_EQ(test::read_text(a_folder + "/training_log.txt").find("after both"), std::string::npos);
}

TEST_F(TwoTrainers, TheProcessGetsItsThreadCountBack) {
  at::set_num_threads(2);
  {
    auto t = trainer("0");
    EXPECT_EQ(at::get_num_threads(), 1);
    ASSERT_EQ(t->run(), training::TrainOutcome::Finished);
  }
  EXPECT_EQ(at::get_num_threads(), 2);
}
