#include "evaluation/metrics.h"

#include <cmath>
#include <limits>

namespace medseg::evaluation {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json number_or_null(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

bool in_set(int v, const std::vector<int>& set) {
  for (int s : set)
    if (s == v) return true;
  return false;
}
}  // namespace

double LabelCounts::dice() const {
  const int64_t d = 2 * tp + fp + fn;
  return d == 0 ? kNaN : 2.0 * static_cast<double>(tp) / static_cast<double>(d);
}

double LabelCounts::iou() const {
  const int64_t d = tp + fp + fn;
  return d == 0 ? kNaN : static_cast<double>(tp) / static_cast<double>(d);
}

std::vector<LabelCounts> count_labels(const int32_t* ref, const int32_t* pred, int64_t n,
                                      const std::vector<std::vector<int>>& labels, std::optional<int> ignore) {
  std::vector<LabelCounts> out(labels.size());
  for (size_t l = 0; l < labels.size(); ++l) {
    LabelCounts& c = out[l];
    const bool single = labels[l].size() == 1;
    const int v0 = labels[l][0];
    for (int64_t i = 0; i < n; ++i) {
      if (ignore && ref[i] == *ignore) continue;
      const bool r = single ? ref[i] == v0 : in_set(ref[i], labels[l]);
      const bool p = single ? pred[i] == v0 : in_set(pred[i], labels[l]);
      c.tp += r && p;
      c.fp += !r && p;
      c.fn += r && !p;
      c.tn += !r && !p;
    }
  }
  return out;
}

namespace {

constexpr const char* kCountNames[6] = {"TP", "FP", "FN", "TN", "n_pred", "n_ref"};

// One label's values over the cases: Dice, IoU and HD95 per case, and the counts summed (kCountNames' order).
struct LabelSeries {
  std::vector<double> dice, iou, hd;
  double sums[6] = {0, 0, 0, 0, 0, 0};
};

// One case's metrics of one label, as nnU-Net's summary.json writes them; its values are added to `series`.
json case_label_metrics(const LabelCounts& k, LabelSeries& series) {
  const int64_t counts[6] = {k.tp, k.fp, k.fn, k.tn, k.tp + k.fp, k.tp + k.fn};
  json e = {{"Dice", number_or_null(k.dice())}, {"IoU", number_or_null(k.iou())}};
  for (int c = 0; c < 6; ++c) e[kCountNames[c]] = counts[c];
  if (k.hd95) e["HD95"] = *k.hd95;
  series.dice.push_back(k.dice());
  series.iou.push_back(k.iou());
  if (k.hd95) series.hd.push_back(*k.hd95);
  for (int c = 0; c < 6; ++c) series.sums[c] += static_cast<double>(counts[c]);
  return e;
}

double nanmean(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v)
    if (!std::isnan(x)) s += x, ++n;
  return n ? s / n : kNaN;
}

// nnU-Net takes a plain mean over labels for the foreground mean: one label that is NaN for every case makes it NaN.
double plain_mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? kNaN : s / static_cast<double>(v.size());
}

}  // namespace

json summary_json(const std::vector<CaseResult>& cases, const std::vector<std::string>& keys) {
  const size_t nl = keys.size();
  std::vector<LabelSeries> series(nl);
  json per_case = json::array();
  for (const auto& c : cases) {
    json m = json::object();
    for (size_t l = 0; l < nl; ++l) m[keys[l]] = case_label_metrics(c.per_label[l], series[l]);
    per_case.push_back({{"metrics", m}, {"prediction_file", c.prediction_file}, {"reference_file", c.reference_file}});
  }
  json mean = json::object();
  std::vector<double> fg_dice, fg_iou, fg_hd, fg_counts[6];
  const double nc = cases.empty() ? kNaN : static_cast<double>(cases.size());
  for (size_t l = 0; l < nl; ++l) {
    const LabelSeries& ls = series[l];
    json e = {{"Dice", number_or_null(nanmean(ls.dice))}, {"IoU", number_or_null(nanmean(ls.iou))}};
    for (int c = 0; c < 6; ++c) {
      e[kCountNames[c]] = ls.sums[c] / nc;
      fg_counts[c].push_back(ls.sums[c] / nc);
    }
    if (!ls.hd.empty()) {
      e["HD95"] = nanmean(ls.hd);
      fg_hd.push_back(nanmean(ls.hd));
    }
    mean[keys[l]] = e;
    fg_dice.push_back(nanmean(ls.dice));
    fg_iou.push_back(nanmean(ls.iou));
  }
  json fg = {{"Dice", number_or_null(plain_mean(fg_dice))}, {"IoU", number_or_null(plain_mean(fg_iou))}};
  for (int c = 0; c < 6; ++c) fg[kCountNames[c]] = plain_mean(fg_counts[c]);
  if (!fg_hd.empty()) fg["HD95"] = plain_mean(fg_hd);
  return {{"foreground_mean", fg}, {"mean", mean}, {"metric_per_case", per_case}};
}

}  // namespace medseg::evaluation
