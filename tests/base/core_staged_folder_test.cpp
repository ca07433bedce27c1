// StagedFolder::commit(false), the install of a model zip without --overwrite: a target folder that
// appeared while the staged one was built is left as it was, and the staged build is removed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/output_folder.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

TEST(StagedFolder, CommitWithoutReplaceKeepsAFolderThatAppearedMeanwhile) {
  medseg::test::TempDir d("stage");
  const std::string target = d / "parent/model";
  {
    medseg::StagedFolder stage(target);
    std::ofstream(stage.path() + "/new.txt") << "new";
    fs::create_directories(target);
    std::ofstream(target + "/mine.txt") << "mine";
    const auto before = medseg::test::folder_snapshot(d.path());
    EXPECT_THROW(stage.commit(false), medseg::FileError);
    EXPECT_EQ(medseg::test::folder_snapshot(d.path()), before);
  }
  // Only the user's folder is left: the staged build is gone.
  EXPECT_EQ(medseg::test::folder_snapshot(d / "parent"),
            (std::map<std::string, std::string>{
                {"model", "<dir>"}, {"model/mine.txt", medseg::test::folder_snapshot(target)["mine.txt"]}}));
}

TEST(StagedFolder, CommitWithoutReplaceMovesIntoAnAbsentTarget) {
  medseg::test::TempDir d("stage");
  const std::string target = d / "parent/model";
  medseg::StagedFolder stage(target);
  std::ofstream(stage.path() + "/new.txt") << "new";
  stage.commit(false);
  EXPECT_EQ(medseg::test::read_text(target + "/new.txt"), "new");
  EXPECT_EQ(medseg::test::folder_snapshot(d / "parent").size(), 2u);  // model, model/new.txt
}
