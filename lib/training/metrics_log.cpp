#include "training/metrics_log.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/json_io.h"

using nlohmann::json;

namespace medseg::training {
namespace {

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
double num_of(const json& j) { return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>(); }

}  // namespace

json to_json(const EpochMetrics& m) {
  json dice = json::array();
  for (double d : m.pseudo_dice) dice.push_back(num(d));
  return {{"epoch", m.epoch},    {"train_loss", num(m.train_loss)},     {"val_loss", num(m.val_loss)},
          {"pseudo_dice", dice}, {"mean_fg_dice", num(m.mean_fg_dice)}, {"ema_pseudo_dice", num(m.ema_pseudo_dice)},
          {"lr", num(m.lr)},     {"epoch_time", num(m.epoch_time)}};
}

EpochMetrics metrics_from_json(const json& j) {
  EpochMetrics m;
  m.epoch = j.at("epoch").get<int64_t>();
  m.train_loss = num_of(j.at("train_loss"));
  m.val_loss = num_of(j.at("val_loss"));
  for (const auto& d : j.at("pseudo_dice")) m.pseudo_dice.push_back(num_of(d));
  m.mean_fg_dice = num_of(j.value("mean_fg_dice", json(nanmean(m.pseudo_dice))));
  m.ema_pseudo_dice = num_of(j.at("ema_pseudo_dice"));
  m.lr = num_of(j.at("lr"));
  m.epoch_time = num_of(j.at("epoch_time"));
  return m;
}

json to_json(const std::vector<EpochMetrics>& log) {
  json a = json::array();
  for (const auto& m : log) a.push_back(to_json(m));
  return a;
}

std::vector<EpochMetrics> metrics_from_json_array(const json& j) {
  std::vector<EpochMetrics> out;
  for (const auto& e : j) out.push_back(metrics_from_json(e));
  return out;
}

double nanmean(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v)
    if (!std::isnan(x)) {
      s += x;
      ++n;
    }
  return n ? s / n : std::numeric_limits<double>::quiet_NaN();
}

double update_ema(std::optional<double> previous, double value, double momentum) {
  if (!previous || std::isnan(*previous)) return value;
  return momentum * *previous + (1.0 - momentum) * value;
}

void append_metrics(const std::string& path, const EpochMetrics& m) {
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  std::ofstream out(path, std::ios::app);
  MEDSEG_CHECK_FILE(out, path, "cannot open for appending");
  out << to_json(m).dump() << "\n";
  out.flush();
  MEDSEG_CHECK_FILE(out, path, "write failed");
}

std::vector<EpochMetrics> read_metrics(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<EpochMetrics> out;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(metrics_from_json(parse_json_text<json>(line, path)));
    } catch (const std::exception& e) {
      if (in.eof()) break;  // a torn last line (killed mid-append, no newline yet): drop it
      throw FileError(path, concat("line ", no, " is not a metrics entry (", e.what(), ")"));
    }
  }
  return out;
}

void truncate_metrics(const std::string& path, int64_t epochs) {
  if (!std::filesystem::exists(path)) return;
  std::string text;
  for (const auto& m : read_metrics(path))
    if (m.epoch < epochs) text += to_json(m).dump() + "\n";
  write_file_atomic(path, text);
}

}  // namespace medseg::training
