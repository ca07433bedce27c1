#include "distributed/same_everywhere.h"

#include "core/digest.h"
#include "core/error.h"

namespace medseg::distributed {
namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    out.push_back(text.substr(at, nl - at));
  return out;
}

}  // namespace

void check_same_lines(ProcessGroup& group, const std::vector<std::string>& lines, const std::string& differs,
                      const std::string& item, const std::string& hint) {
  std::string joined;
  for (const auto& l : lines) joined += l + "\n";
  const auto hashes = group.all_gather(std::to_string(fnv1a(joined)));
  bool same = true;
  for (const auto& h : hashes) same = same && h == hashes[0];
  if (same) return;
  const auto all = group.all_gather(joined);  // only now the lines, to name the item
  const auto first = split_lines(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    const auto theirs = split_lines(all[r]);
    size_t i = 0;
    while (i < first.size() && i < theirs.size() && first[i] == theirs[i]) ++i;
    const std::string& line = i < first.size() ? first[i] : theirs[i];
    const std::string rank = concat("rank ", r);
    throw Error(concat(rank, " ", differs, " rank 0: ", item, " '", line.substr(0, line.find(' ')),
                       "' differs (rank 0: ", i < first.size() ? first[i] : "none", "; ", rank, ": ",
                       i < theirs.size() ? theirs[i] : "none", "): ", hint));
  }
}

}  // namespace medseg::distributed
