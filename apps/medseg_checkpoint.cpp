// medseg_checkpoint: inspect, compare and average medseg checkpoints (docs/checkpoints.md).
#include <ATen/ATen.h>

#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "checkpoint/average.h"
#include "checkpoint/container.h"
#include "cli_common.h"
#include "core/error.h"
#include "core/json_object_reader.h"
#include "core/strings.h"

using namespace medseg;
using namespace medseg::checkpoint;

namespace {

std::string shape_str(const at::Tensor& t) { return "[" + join(t.sizes(), ", ") + "]"; }

int info(const std::string& path) {
  const ArchiveHeader h = read_archive_header(path);
  const TensorArchive a = read_archive(path);  // verifies the checksum
  std::printf("file: %s\n", path.c_str());
  std::printf("format version: %u\n", h.version);
  const auto& meta = a.meta;  // typed reads: a checksum-valid file can still hold odd metadata
  if (meta.contains("kind")) std::printf("kind: %s\n", json_as<std::string>(meta["kind"], "meta.kind", path).c_str());
  if (meta.contains("epoch"))
    std::printf("epoch: %lld\n", static_cast<long long>(json_as<int64_t>(meta["epoch"], "meta.epoch", path)));
  if (meta.contains("optimizer") && meta["optimizer"].is_object() && meta["optimizer"].contains("type")) {
    const auto type = json_as<std::string>(meta["optimizer"]["type"], "meta.optimizer.type", path);
    std::printf("optimizer: %s\n", type.empty() ? "(none saved)" : type.c_str());
  }
  std::printf("checksum: ok (crc32)\n");
  std::printf("tensors: %zu\n", a.tensors.size());
  std::map<const void*, std::string> first_key;
  for (const auto& [name, t] : a.tensors) {
    const void* st = t.storage().unsafeGetStorageImpl();
    const auto it = first_key.find(st);
    const std::string alias = it == first_key.end() ? "" : "  (alias of " + it->second + ")";
    if (it == first_key.end()) first_key.emplace(st, name);
    std::printf("  %-48s %-9s %-20s %10lld B%s\n", name.c_str(), dtype_name(t.scalar_type()).c_str(),
                shape_str(t).c_str(), static_cast<long long>(t.numel() * t.element_size()), alias.c_str());
  }
  const AliasStats s = alias_stats(a.tensors);
  std::printf("tensor bytes: %lld (summed over keys)\n", static_cast<long long>(s.total_bytes));
  std::printf("unique bytes: %lld in %lld storages; %lld aliased keys\n", static_cast<long long>(s.unique_bytes),
              static_cast<long long>(s.unique_storages),
              static_cast<long long>(a.tensors.size()) - static_cast<long long>(s.unique_storages));
  std::printf("file bytes: %lld\n", static_cast<long long>(h.file_size));
  return 0;
}

// --rtol/--atol: a tensor "differs" when max|A - B| > atol + rtol * max|B|; the exit status is then 1.
// (atol is for tensors whose values are only rounding noise, such as the bias of a convolution that
// an instance norm follows: its true gradient is zero.) Without --rtol the exit status is 0.
int diff(const std::string& pa, const std::string& pb, double rtol, double atol) {
  const TensorArchive a = read_archive(pa), b = read_archive(pb);
  std::map<std::string, at::Tensor> mb(b.tensors.begin(), b.tensors.end());
  std::set<std::string> in_a;
  double overall = 0, overall_rel = 0;
  int differing = 0, problems = 0, beyond = 0;
  for (const auto& [name, ta] : a.tensors) {
    in_a.insert(name);
    const auto it = mb.find(name);
    if (it == mb.end()) {
      std::printf("only in A: %s\n", name.c_str());
      ++problems;
      continue;
    }
    const at::Tensor& tb = it->second;
    if (ta.sizes() != tb.sizes()) {
      std::printf("shape differs: %s %s vs %s\n", name.c_str(), shape_str(ta).c_str(), shape_str(tb).c_str());
      ++problems;
      continue;
    }
    const bool numeric = ta.numel() > 0 && !ta.is_complex();
    const double d = numeric ? (ta.to(at::kDouble) - tb.to(at::kDouble)).abs().max().item<double>() : 0.0;
    const double scale = numeric ? tb.to(at::kDouble).abs().max().item<double>() : 0.0;
    const double rel = d == 0 ? 0.0 : scale > 0 ? d / scale : std::numeric_limits<double>::infinity();
    if (d != 0) {
      std::printf("  %-48s max abs difference %.6g (relative %.3g)\n", name.c_str(), d, rel);
      ++differing;
    }
    if (rtol >= 0 && d > atol + rtol * scale) {
      std::printf("  beyond tolerance: %s\n", name.c_str());
      ++beyond;
    }
    overall = std::max(overall, d);
    overall_rel = std::max(overall_rel, rel);
  }
  for (const auto& [name, t] : b.tensors)
    if (!in_a.count(name)) {
      std::printf("only in B: %s\n", name.c_str());
      ++problems;
    }
  if (a.meta != b.meta) std::printf("metadata differs\n");
  std::printf("%d tensors differ, %d missing or mismatched keys\n", differing, problems);
  std::printf("max abs difference: %.9g\n", overall);
  std::printf("max relative difference: %.3g\n", overall_rel);
  if (rtol < 0) return 0;
  if (beyond > 0 || problems > 0) {
    std::printf("%d tensors differ by more than --atol %g + --rtol %g times their largest value\n", beyond, atol, rtol);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Inspect, compare and average medseg checkpoints", "medseg_checkpoint"};
  app.require_subcommand(1);
  std::string file, a, b, out;
  double rtol = -1, atol = 0;
  std::vector<std::string> inputs;
  auto* info_cmd = app.add_subcommand("info", "Format version, epoch, tensors, sizes and aliasing");
  info_cmd->add_option("file", file, "checkpoint")->required();
  auto* diff_cmd = app.add_subcommand("diff", "Per-tensor max abs difference and missing keys");
  diff_cmd->add_option("a", a, "first checkpoint")->required();
  diff_cmd->add_option("b", b, "second checkpoint")->required();
  diff_cmd->add_option("--rtol", rtol, "Exit 1 when a tensor's max|A-B| exceeds rtol * max|B| (or keys differ)")
      ->check(CLI::Range(0.0, 1.0));
  diff_cmd->add_option("--atol", atol, "With --rtol: absolute floor of the tolerance (default 0)")
      ->check(CLI::Range(0.0, 1.0));
  auto* avg_cmd = app.add_subcommand("average", "Average the weights of checkpoints (federated averaging)");
  avg_cmd->add_option("inputs", inputs, "checkpoints (two or more)")->required()->expected(2, -1);
  avg_cmd->add_option("-o,--output", out, "output checkpoint")->required();
  return cli::run(argc, argv, app, [&]() {
    if (*info_cmd) return info(file);
    if (*diff_cmd) return diff(a, b, rtol, atol);
    average_checkpoints(inputs, out);
    std::printf("wrote %s (average of %zu checkpoints)\n", out.c_str(), inputs.size());
    return 0;
  });
}
