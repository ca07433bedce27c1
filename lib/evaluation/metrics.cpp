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

json summary_json(const std::vector<CaseResult>& cases, const std::vector<std::string>& keys) {
  json per_case = json::array();
  const size_t nl = keys.size();
  std::vector<std::vector<double>> dice(nl), iou(nl), hd(nl);
  std::vector<double> sums[6];
  for (auto& s : sums) s.assign(nl, 0.0);
  for (const auto& c : cases) {
    json m = json::object();
    for (size_t l = 0; l < nl; ++l) {
      const LabelCounts& k = c.per_label[l];
      json e = {{"Dice", number_or_null(k.dice())},
                {"IoU", number_or_null(k.iou())},
                {"TP", k.tp},
                {"FP", k.fp},
                {"FN", k.fn},
                {"TN", k.tn},
                {"n_pred", k.tp + k.fp},
                {"n_ref", k.tp + k.fn}};
      if (k.hd95) e["HD95"] = *k.hd95;
      m[keys[l]] = e;
      dice[l].push_back(k.dice());
      iou[l].push_back(k.iou());
      if (k.hd95) hd[l].push_back(*k.hd95);
      const double vals[6] = {double(k.tp), double(k.fp),        double(k.fn),
                              double(k.tn), double(k.tp + k.fp), double(k.tp + k.fn)};
      for (int s = 0; s < 6; ++s) sums[s][l] += vals[s];
    }
    per_case.push_back({{"metrics", m}, {"prediction_file", c.prediction_file}, {"reference_file", c.reference_file}});
  }
  auto nanmean = [](const std::vector<double>& v) {
    double s = 0;
    int n = 0;
    for (double x : v)
      if (!std::isnan(x)) s += x, ++n;
    return n ? s / n : kNaN;
  };
  const char* count_names[6] = {"TP", "FP", "FN", "TN", "n_pred", "n_ref"};
  json mean = json::object();
  std::vector<double> fg_dice, fg_iou, fg_hd;
  std::vector<double> fg_counts[6];
  const double nc = cases.empty() ? kNaN : static_cast<double>(cases.size());
  for (size_t l = 0; l < nl; ++l) {
    json e = {{"Dice", number_or_null(nanmean(dice[l]))}, {"IoU", number_or_null(nanmean(iou[l]))}};
    for (int s = 0; s < 6; ++s) {
      e[count_names[s]] = sums[s][l] / nc;
      fg_counts[s].push_back(sums[s][l] / nc);
    }
    if (!hd[l].empty()) {
      e["HD95"] = nanmean(hd[l]);
      fg_hd.push_back(nanmean(hd[l]));
    }
    mean[keys[l]] = e;
    fg_dice.push_back(nanmean(dice[l]));
    fg_iou.push_back(nanmean(iou[l]));
  }
  // nnU-Net takes a plain mean over labels here: one label that is NaN for every case makes it NaN.
  auto mean_of = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? kNaN : s / static_cast<double>(v.size());
  };
  json fg = {{"Dice", number_or_null(mean_of(fg_dice))}, {"IoU", number_or_null(mean_of(fg_iou))}};
  for (int s = 0; s < 6; ++s) fg[count_names[s]] = mean_of(fg_counts[s]);
  if (!fg_hd.empty()) fg["HD95"] = mean_of(fg_hd);
  return {{"foreground_mean", fg}, {"mean", mean}, {"metric_per_case", per_case}};
}

}  // namespace medseg::evaluation
