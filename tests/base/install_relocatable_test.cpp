// `cmake --install` writes a tree that works where it is moved: the installed programs run (their library
// paths survive the install) and read configs/ and plans/ from <prefix>/share/medseg beside them, not from
// the source tree they were built from; $MEDSEG_SHARE_DIR replaces that folder (docs/install.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// Replaces the refusal reason of nnUNetTrainerAdan in a trainer variant table with `reason`.
void mark_table(const fs::path& table, const std::string& reason) {
  std::string text = test::read_text(table.string());
  const std::string key = "\"nnUNetTrainerAdan\": \"";
  const auto at = text.find(key);
  ASSERT_NE(at, std::string::npos);
  const auto end = text.find('"', at + key.size());
  text.replace(at + key.size(), end - at - key.size(), reason);
  std::ofstream(table) << text;
}

}  // namespace

TEST(Install, AMovedTreeRunsAndReadsItsOwnDataFiles) {
  const fs::path build = fs::path(test::bin_dir()).parent_path();
  test::TempDir dir("install");
  const fs::path first = dir / "first", moved = dir / "moved";
  const auto install =
      test::run_cli("/usr/bin/env", "cmake --install " + build.string() + " --prefix " + first.string());
  ASSERT_EQ(install.exit_code, 0) << install.output;
  fs::rename(first, moved);
  ASSERT_TRUE(fs::exists(moved / "bin/medseg_train"));
  EXPECT_FALSE(fs::exists(moved / "bin/medseg_bench_models")) << "benchmark programs are not installed";
  ASSERT_TRUE(fs::exists(moved / "share/medseg/configs/trainer_variants.json"));
  ASSERT_TRUE(fs::exists(moved / "share/medseg/plans/nnUNetPlannerResEncM.json"));

  const auto version = test::run_cli((moved / "bin/medseg_version").string(), "");
  EXPECT_EQ(version.exit_code, 0) << version.output;

  // Only the moved tree's table says this: the installed program must have read it.
  mark_table(moved / "share/medseg/configs/trainer_variants.json", "refused by the moved tree");
  const std::string train = (moved / "bin/medseg_train").string();
  auto r = test::run_cli(train, "1 3d_fullres 0 --tr nnUNetTrainerAdan");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("nnUNetTrainerAdan: refused by the moved tree"), std::string::npos) << r.output;

  // $MEDSEG_SHARE_DIR wins over the folder beside the program.
  fs::create_directories(dir / "share/configs");
  fs::copy_file(moved / "share/medseg/configs/trainer_variants.json", dir / "share/configs/trainer_variants.json");
  mark_table(dir / "share/configs/trainer_variants.json", "refused by MEDSEG_SHARE_DIR");
  r = test::run_cli(train, "1 3d_fullres 0 --tr nnUNetTrainerAdan", "MEDSEG_SHARE_DIR=" + dir / "share");
  EXPECT_NE(r.output.find("nnUNetTrainerAdan: refused by MEDSEG_SHARE_DIR"), std::string::npos) << r.output;

  // The build tree's program still reads the source tree.
  r = test::run_cli("medseg_train", "1 3d_fullres 0 --tr nnUNetTrainerAdan");
  EXPECT_NE(r.output.find("the Adan optimizer is not implemented"), std::string::npos) << r.output;

  // Without its share/medseg, the moved tree's program names the folder it lacks; it never falls back to
  // the source tree (which would answer "the Adan optimizer is not implemented").
  fs::remove_all(moved / "share/medseg/configs");
  r = test::run_cli(train, "1 3d_fullres 0 --tr nnUNetTrainerAdan");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.output.find("is not implemented"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find((moved / "share/medseg/configs").string()), std::string::npos) << r.output;
}

TEST(Install, TheLibraryIsAPackage) {
  const fs::path build = fs::path(test::bin_dir()).parent_path();
  test::TempDir dir("install_pkg");
  const auto install = test::run_cli("/usr/bin/env", "cmake --install " + build.string() + " --prefix " + dir.path());
  ASSERT_EQ(install.exit_code, 0) << install.output;
  // One archive per stage, the headers of lib/ by stage folder, and the CMake package with its targets.
  const fs::path libdir = fs::exists(dir / "lib/cmake/medseg") ? dir / "lib" : dir / "lib64";
  for (const char* stage : {"core", "io", "planning", "models", "inference", "training", "api"})
    EXPECT_TRUE(fs::exists(libdir / ("libmedseg_" + std::string(stage) + ".a"))) << stage;
  EXPECT_TRUE(fs::exists(dir / "include/medseg/api/segmenter.h"));
  EXPECT_TRUE(fs::exists(dir / "include/medseg/core/volume.h"));
  EXPECT_FALSE(fs::exists(dir / "include/medseg/api/segmenter.cpp"));
  EXPECT_FALSE(fs::exists(dir / "include/medseg/api/stage.cmake"));
  EXPECT_TRUE(fs::exists(libdir / "cmake/medseg/medsegConfig.cmake"));
  EXPECT_TRUE(fs::exists(libdir / "cmake/medseg/medsegConfigVersion.cmake"));
  const std::string targets = test::read_text((libdir / "cmake/medseg/medsegTargets.cmake").string());
  EXPECT_NE(targets.find("add_library(medseg::api STATIC IMPORTED)"), std::string::npos);
  EXPECT_NE(targets.find("add_library(medseg::io STATIC IMPORTED)"), std::string::npos);
  // Nothing in the package points into the build or source tree.
  EXPECT_EQ(targets.find(build.string()), std::string::npos);
  EXPECT_EQ(targets.find(test::source_path("lib")), std::string::npos);
}
