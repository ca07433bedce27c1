#pragma once
// nnU-Net's cross-validation splits, bit-for-bit: sklearn KFold(n_splits=5, shuffle=True,
// random_state=12345) over the sorted case identifiers, which shuffles with numpy's legacy
// RandomState (MT19937 + masked rejection sampling). splits_final.json is a list of
// {"train": [...], "val": [...]}, written once and then reused.
#include <cstdint>
#include <string>
#include <vector>

#include "core/path_component.h"

namespace medseg::training {

// numpy.random.RandomState(seed) for the calls nnU-Net needs (legacy seeding and streams).
class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed);
  uint32_t next_uint32();                       // MT19937 genrand_int32
  uint64_t interval(uint64_t max);              // uniform in [0, max], numpy's random_interval
  std::vector<int64_t> permutation(int64_t n);  // RandomState(seed).permutation(n)
  template <class T>
  void shuffle(std::vector<T>& v) {  // RandomState.shuffle on a 1-D array
    for (std::size_t i = v.size(); i-- > 1;) std::swap(v[i], v[static_cast<std::size_t>(interval(i))]);
  }

 private:
  void twist();
  uint32_t mt_[624];
  int pos_;
};

struct Split {
  std::vector<std::string> train, val;
};

// KFold(n_splits, shuffle=True, random_state=seed).split over sorted(case_ids), as nnU-Net's
// generate_crossval_split: train and val lists keep sorted order.
std::vector<Split> kfold_splits(std::vector<std::string> case_ids, int n_splits = 5, uint32_t seed = 12345);

// Reads/writes splits_final.json (nnU-Net layout). Throws FileError naming the file.
std::vector<Split> read_splits(const std::string& path);
void write_splits(const std::string& path, const std::vector<Split>& splits);

// The splits to use: `path` if it exists (user-provided or from an earlier run; every listed case
// must be in case_ids), otherwise kfold_splits(case_ids) written to `path` first.
std::vector<Split> load_or_create_splits(const std::string& path, const std::vector<std::string>& case_ids);

// nnU-Net's fallback for a fold beyond the splits file: RandomState(12345 + fold) picks 80% of the
// sorted cases for training (in draw order); the rest (sorted) is validation.
Split random_80_20_split(std::vector<std::string> case_ids, int fold);

// parse_fold lives in core/paths.h: prediction reads fold_K folders too.
using medseg::parse_fold;

// The fold to train: "all" -> train = val = every case (sorted); a number < splits.size() -> that
// split; a larger number -> random_80_20_split. Throws Error for anything else.
Split select_fold(const std::vector<Split>& splits, const std::vector<std::string>& case_ids, const std::string& fold);

}  // namespace medseg::training
