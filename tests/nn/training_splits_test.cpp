// nnU-Net-identical cross-validation splits. Expected numbers come from numpy 1.24 (Debian's
// python3-numpy), computed once by hand, e.g.
//   python3 -c "import numpy as np; print(list(np.random.RandomState(12345).permutation(10)))"
// and for the folds, sklearn's KFold logic replayed with numpy:
//   ind = np.arange(12); np.random.RandomState(12345).shuffle(ind); sizes [3,3,2,2,2];
//   val fold k = sorted(ids[ind[start:stop]]), train = the rest in sorted order.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/json_io.h"
#include "support/test_support.h"
#include "training/splits.h"

using namespace medseg;
using namespace medseg::training;

namespace {
std::vector<std::string> case_ids(int n) {
  std::vector<std::string> ids;
  for (int i = n - 1; i >= 0; --i) ids.push_back((i < 10 ? "case_0" : "case_") + std::to_string(i));  // unsorted
  return ids;
}
}  // namespace

TEST(TrainingSplits, PermutationMatchesNumpyLegacyRandomState) {
  EXPECT_EQ(NumpyRandomState(12345).permutation(10), (std::vector<int64_t>{0, 7, 3, 9, 6, 4, 1, 8, 5, 2}));
  EXPECT_EQ(NumpyRandomState(12345).permutation(7), (std::vector<int64_t>{6, 3, 4, 0, 1, 5, 2}));
  EXPECT_EQ(NumpyRandomState(12345).permutation(23),
            (std::vector<int64_t>{10, 19, 8, 17, 3, 12, 16, 0, 15, 7, 18, 11, 14, 6, 20, 13, 22, 21, 9, 4, 1, 5, 2}));
  EXPECT_EQ(NumpyRandomState(0).permutation(5), (std::vector<int64_t>{2, 0, 1, 3, 4}));
  EXPECT_EQ(NumpyRandomState(42).permutation(12), (std::vector<int64_t>{10, 9, 0, 8, 5, 2, 1, 11, 4, 7, 3, 6}));
  // Long enough to pass the 624-word state refill several times.
  const auto p = NumpyRandomState(12345).permutation(1000);
  EXPECT_EQ(std::vector<int64_t>(p.begin(), p.begin() + 10),
            (std::vector<int64_t>{144, 833, 270, 468, 962, 186, 942, 516, 286, 458}));
  EXPECT_EQ(std::vector<int64_t>(p.end() - 5, p.end()), (std::vector<int64_t>{420, 129, 285, 485, 482}));
}

TEST(TrainingSplits, ShuffleConsumesTheStreamLikePermutation) {
  // np.random.RandomState(12345).shuffle(np.arange(12)) -> [8, 0, 3, 7, 11, 10, 6, 9, 4, 1, 5, 2]
  std::vector<int> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i;
  NumpyRandomState(12345).shuffle(v);
  EXPECT_EQ(v, (std::vector<int>{8, 0, 3, 7, 11, 10, 6, 9, 4, 1, 5, 2}));
}

TEST(TrainingSplits, KFoldMatchesNnUNetFolds) {
  const auto splits = kfold_splits(case_ids(12));
  ASSERT_EQ(splits.size(), 5u);
  EXPECT_EQ(splits[0].val, (std::vector<std::string>{"case_00", "case_03", "case_08"}));
  EXPECT_EQ(splits[1].val, (std::vector<std::string>{"case_07", "case_10", "case_11"}));
  EXPECT_EQ(splits[2].val, (std::vector<std::string>{"case_06", "case_09"}));
  EXPECT_EQ(splits[3].val, (std::vector<std::string>{"case_01", "case_04"}));
  EXPECT_EQ(splits[4].val, (std::vector<std::string>{"case_02", "case_05"}));
  EXPECT_EQ(splits[0].train, (std::vector<std::string>{"case_01", "case_02", "case_04", "case_05", "case_06", "case_07",
                                                       "case_09", "case_10", "case_11"}));
  EXPECT_THROW(kfold_splits(case_ids(4)), Error);
}

TEST(TrainingSplits, FoldBeyondTheFileIsNnUNetsRandom8020Split) {
  // keys = sorted ids; RandomState(12345 + 5).choice(12, 9, replace=False) = [4,7,0,10,5,9,8,3,11]
  const auto s = select_fold(kfold_splits(case_ids(12)), case_ids(12), "5");
  EXPECT_EQ(s.train, (std::vector<std::string>{"case_04", "case_07", "case_00", "case_10", "case_05", "case_09",
                                               "case_08", "case_03", "case_11"}));
  EXPECT_EQ(s.val, (std::vector<std::string>{"case_01", "case_02", "case_06"}));
}

TEST(TrainingSplits, FoldAllAndBadFolds) {
  const auto ids = case_ids(6);
  const auto splits = kfold_splits(ids);
  const auto all = select_fold(splits, ids, "all");
  EXPECT_EQ(all.train.size(), 6u);
  EXPECT_EQ(all.train, all.val);
  EXPECT_EQ(all.train.front(), "case_00");
  EXPECT_EQ(select_fold(splits, ids, "2").val, splits[2].val);
  EXPECT_THROW(select_fold(splits, ids, "x"), Error);
  EXPECT_THROW(select_fold(splits, ids, "-1"), Error);
  EXPECT_THROW(select_fold(splits, ids, "1a"), Error);
}

TEST(TrainingSplits, SplitsFileIsWrittenOnceAndUserSplitsAreRespected) {
  test::TempDir dir("splits");
  const std::string path = dir / "splits_final.json";
  const auto ids = case_ids(10);
  const auto first = load_or_create_splits(path, ids);
  ASSERT_TRUE(std::filesystem::exists(path));
  const json j = read_json(path);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), 5u);
  EXPECT_EQ(j[0].at("val").get<std::vector<std::string>>(), first[0].val);

  // A user-provided file (2 folds) wins over the default.
  write_json(path, json::array({{{"train", {"case_00"}}, {"val", {"case_01"}}},
                                {{"train", {"case_01"}}, {"val", {"case_00"}}}}));
  const auto user = load_or_create_splits(path, ids);
  ASSERT_EQ(user.size(), 2u);
  EXPECT_EQ(user[1].train, std::vector<std::string>{"case_01"});

  // Unknown cases and malformed files are clear errors.
  write_json(path, json::array({{{"train", {"nope"}}, {"val", {"case_01"}}}}));
  EXPECT_THROW(load_or_create_splits(path, ids), FileError);
  write_json(path, json::object());
  EXPECT_THROW(load_or_create_splits(path, ids), FileError);
}
