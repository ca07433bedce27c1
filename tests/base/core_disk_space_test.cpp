// The free-space check an install makes before it writes (core/disk_space.h): more than the file
// system holds is refused naming the path, also one whose folders do not exist yet.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>

#include "core/disk_space.h"
#include "core/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

TEST(DiskSpace, MoreThanTheFileSystemHoldsIsRefusedNamingThePath) {
  test::TempDir d("space");
  const std::string dest = d / "not/yet/made";  // asked of the nearest existing folder
  EXPECT_NO_THROW(check_free_space(dest, 1, "one byte"));
  try {
    check_free_space(dest, UINT64_MAX / 2, "the files of m.zip");
    ADD_FAILURE() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find(dest + ": needs 8.0 EiB (the files of m.zip) but the file system has only"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(d / "not"));
}
