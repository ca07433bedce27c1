// What a command builds goes away when SIGINT or SIGTERM ends it (core/signal_cleanup.h), and what
// a SIGKILLed one left is swept by the next staging in that folder (core/staging_names.h). The
// signal cases run in a forked child, which the signal ends as it would end a CLI.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/output_folder.h"
#include "core/signal_cleanup.h"
#include "core/staged_file.h"
#include "core/staging_names.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x";
}

// Runs `body` in a child process and returns how it ended (128 + signal, or the exit code).
template <class F>
int in_child(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// A pid that no process has: a child that has ended and been waited for.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// `name` (a staging name of this process) with `pid` in place of this process's pid.
std::string with_pid(const std::string& name, pid_t pid) {
  const std::string mine = "." + std::to_string(::getpid()) + ".";
  const auto at = name.rfind(mine);
  return name.substr(0, at) + "." + std::to_string(pid) + "." + name.substr(at + mine.size());
}

}  // namespace

TEST(RemoveOnSignal, SigtermRemovesTheRegisteredPathsAndStillEndsTheProcess) {
  test::TempDir d("sig");
  const int how = in_child([&] {
    touch(d / "stage/a.txt");
    touch(d / "stage/b/c/d.txt");
    fs::create_directories(d / "made/for/output");
    touch(d / "released/keep.txt");
    touch(d / "kept_parent/other.txt");  // not empty: the empty-folder chain stops here
    fs::create_directories(d / "kept_parent/empty");
    RemoveOnSignal stage = RemoveOnSignal::tree(d / "stage");
    RemoveOnSignal chain = RemoveOnSignal::empty_folders(d / "made/for/output", d / "made");
    RemoveOnSignal chain2 = RemoveOnSignal::empty_folders(d / "kept_parent/empty", d / "kept_parent");
    RemoveOnSignal released = RemoveOnSignal::tree(d / "released");
    released.release();
    ::raise(SIGTERM);
    ::_exit(3);  // not reached: the signal ends the process
  });
  EXPECT_EQ(how, 128 + SIGTERM);
  EXPECT_FALSE(fs::exists(d / "stage"));
  EXPECT_FALSE(fs::exists(d / "made"));
  EXPECT_TRUE(fs::exists(d / "released/keep.txt"));
  EXPECT_TRUE(fs::exists(d / "kept_parent/other.txt"));
  EXPECT_FALSE(fs::exists(d / "kept_parent/empty"));
}

TEST(RemoveOnSignal, SigintRemovesAnUncommittedStagedFolderAndTheParentsItMade) {
  test::TempDir d("sig");
  touch(d / "results/other.txt");
  const auto before = test::folder_snapshot(d.path());
  const int how = in_child([&] {
    StagedFolder stage(d / "results/Dataset1_A/model");
    touch(stage.path() + "/fold_0/checkpoint_final.ckpt");
    ::raise(SIGINT);
    ::_exit(3);
  });
  EXPECT_EQ(how, 128 + SIGINT);
  EXPECT_EQ(test::folder_snapshot(d.path()), before);
}

TEST(StagingSweep, StagingOfADeadProcessOnThisHostIsRemovedOthersAreKept) {
  test::TempDir d("sweep");
  const std::string target = d / "model";
  const std::string dead = with_pid(staging_sibling(target, "tmp"), dead_pid());
  const std::string dead_old = with_pid(staging_sibling(target, "old"), dead_pid());
  const std::string live = with_pid(staging_sibling(target, "tmp"), ::getppid());
  std::string other_host = with_pid(staging_sibling(target, "tmp"), dead_pid());
  const std::string host = fs::path(other_host).filename().string().substr(std::string(".model.tmp.").size(), 8);
  other_host.replace(other_host.find(host), 8, host == "00000000" ? "11111111" : "00000000");
  for (const auto& f : {dead, dead_old, live, other_host}) touch(f + "/fold_0/x.txt");
  touch(d / ".model.tmp.notes");  // a name of the user's that only looks similar

  { StagedFolder stage(target); }  // constructing one sweeps its folder

  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead_old));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other_host));
  EXPECT_TRUE(fs::exists(d / ".model.tmp.notes"));
}

TEST(StagedFile, CommitWithoutReplaceKeepsAFileThatAppearedMeanwhileAndLeavesNoStaging) {
  test::TempDir d("sfile");
  const std::string target = d / "out/model.zip";
  {
    StagedFile f(target);
    std::ofstream(f.path()) << "new";
    std::ofstream(f.path() + ".XXXXXX") << "a writer's own temporary file";
    std::ofstream(target) << "mine";
    EXPECT_THROW(f.commit(false), FileError);
  }
  EXPECT_EQ(test::read_text(target), "mine");
  EXPECT_EQ(test::folder_snapshot(d.path()).size(), 2u);  // out, out/model.zip
  {
    StagedFile f(target);
    std::ofstream(f.path()) << "new";
    f.commit(true);
  }
  EXPECT_EQ(test::read_text(target), "new");
  EXPECT_EQ(test::folder_snapshot(d.path()).size(), 2u);
}
