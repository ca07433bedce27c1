#include "preprocessing/transpose.h"

#include "core/error.h"

namespace medseg::preprocessing {

Perm3 to_perm3(const std::vector<int>& v, const std::string& source) {
  bool seen[3] = {false, false, false};
  bool ok = v.size() == 3;
  for (std::size_t i = 0; ok && i < 3; ++i) {
    ok = v[i] >= 0 && v[i] < 3 && !seen[v[i]];
    if (ok) seen[v[i]] = true;
  }
  MEDSEG_CHECK(ok, source, ": transpose must be a permutation of [0, 1, 2]");
  return {v[0], v[1], v[2]};
}

Perm3 inverse_perm(const Perm3& p) {
  Perm3 inv{};
  for (int i = 0; i < 3; ++i) inv[p[i]] = i;
  return inv;
}

}  // namespace medseg::preprocessing
