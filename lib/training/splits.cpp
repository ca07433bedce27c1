#include "training/splits.h"
#include "core/path_component.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/json_io.h"

namespace medseg::training {

// --- numpy legacy MT19937 (init_genrand seeding, as RandomState(int) does) ----------------------

NumpyRandomState::NumpyRandomState(uint32_t seed) {
  mt_[0] = seed;
  for (int i = 1; i < 624; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  pos_ = 624;
}

void NumpyRandomState::twist() {
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrix = 0x9908b0dfu;
  for (int i = 0; i < 624; ++i) {
    const uint32_t y = (mt_[i] & kUpper) | (mt_[(i + 1) % 624] & kLower);
    mt_[i] = mt_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
  }
  pos_ = 0;
}

uint32_t NumpyRandomState::next_uint32() {
  if (pos_ >= 624) twist();
  uint32_t y = mt_[pos_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t NumpyRandomState::interval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;  // smallest all-ones mask covering max
  for (int s = 1; s <= 32; s *= 2) mask |= mask >> s;
  uint64_t v;
  if (max <= 0xffffffffULL) {
    while ((v = (next_uint32() & mask)) > max) {}
  } else {
    // numpy draws a 64-bit value as two 32-bit outputs, high word first
    do {
      const uint64_t hi = next_uint32();
      const uint64_t lo = next_uint32();
      v = ((hi << 32) | lo) & mask;
    } while (v > max);
  }
  return v;
}

std::vector<int64_t> NumpyRandomState::permutation(int64_t n) {
  std::vector<int64_t> v(static_cast<std::size_t>(std::max<int64_t>(n, 0)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  shuffle(v);
  return v;
}

// --- KFold --------------------------------------------------------------------------------------

std::vector<Split> kfold_splits(std::vector<std::string> ids, int n_splits, uint32_t seed) {
  std::sort(ids.begin(), ids.end());
  const auto n = static_cast<int64_t>(ids.size());
  MEDSEG_CHECK(n_splits >= 2, "kfold_splits: need at least 2 folds");
  MEDSEG_CHECK(n >= n_splits, "cannot make ", n_splits, " cross-validation folds from ", n, " cases");
  const std::vector<int64_t> order = NumpyRandomState(seed).permutation(n);
  std::vector<Split> out;
  int64_t start = 0;
  for (int f = 0; f < n_splits; ++f) {
    const int64_t size = n / n_splits + (f < n % n_splits ? 1 : 0);
    std::vector<bool> in_val(static_cast<std::size_t>(n), false);
    for (int64_t k = start; k < start + size; ++k)
      in_val[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = true;
    Split s;
    for (int64_t i = 0; i < n; ++i)
      (in_val[static_cast<std::size_t>(i)] ? s.val : s.train).push_back(ids[static_cast<std::size_t>(i)]);
    out.push_back(std::move(s));
    start += size;
  }
  return out;
}

// --- splits_final.json --------------------------------------------------------------------------

std::vector<Split> read_splits(const std::string& path) {
  const json j = read_json(path);
  MEDSEG_CHECK_FILE(j.is_array() && !j.empty(), path,
                    "expected a non-empty list of {\"train\": [...], \"val\": [...]}");
  std::vector<Split> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    try {
      out.push_back({j[i].at("train").get<std::vector<std::string>>(), j[i].at("val").get<std::vector<std::string>>()});
    } catch (const json::exception& e) { throw FileError(path, concat("split ", i, " is malformed (", e.what(), ")")); }
  }
  return out;
}

void write_splits(const std::string& path, const std::vector<Split>& splits) {
  json j = json::array();
  for (const auto& s : splits) j.push_back({{"train", s.train}, {"val", s.val}});
  write_json(path, j, 4);
}

std::vector<Split> load_or_create_splits(const std::string& path, const std::vector<std::string>& case_ids) {
  if (!std::filesystem::exists(path)) {
    auto splits = kfold_splits(case_ids);
    write_splits(path, splits);
    return splits;
  }
  auto splits = read_splits(path);
  const std::set<std::string> known(case_ids.begin(), case_ids.end());
  for (std::size_t i = 0; i < splits.size(); ++i)
    for (const auto* list : {&splits[i].train, &splits[i].val})
      for (const auto& id : *list)
        MEDSEG_CHECK_FILE(known.count(id), path, "split ", i, " names case '", id, "', which is not in the dataset");
  return splits;
}

Split random_80_20_split(std::vector<std::string> ids, int fold) {
  std::sort(ids.begin(), ids.end());
  const auto n = static_cast<int64_t>(ids.size());
  // RandomState(12345 + fold).choice(n, int(n * 0.8), replace=False) == permutation(n)[:k]
  const std::vector<int64_t> perm = NumpyRandomState(12345u + static_cast<uint32_t>(fold)).permutation(n);
  const auto k = static_cast<std::size_t>(static_cast<double>(n) * 0.8);
  std::vector<bool> in_train(ids.size(), false);
  Split s;
  for (std::size_t i = 0; i < k; ++i) {
    s.train.push_back(ids[static_cast<std::size_t>(perm[i])]);  // in draw order, as nnU-Net lists them
    in_train[static_cast<std::size_t>(perm[i])] = true;
  }
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (!in_train[i]) s.val.push_back(ids[i]);
  return s;
}

Split select_fold(const std::vector<Split>& splits, const std::vector<std::string>& case_ids, const std::string& fold) {
  if (parse_fold(fold) == "all") {
    Split s;
    s.train = case_ids;
    std::sort(s.train.begin(), s.train.end());
    s.val = s.train;
    return s;
  }
  const long f = std::stol(fold);
  if (static_cast<std::size_t>(f) < splits.size()) return splits[static_cast<std::size_t>(f)];
  return random_80_20_split(case_ids, static_cast<int>(f));
}

}  // namespace medseg::training
