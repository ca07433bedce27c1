#include "inference/predict_cases.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/strings.h"
#include "core/log.h"
#include "core/progress.h"
#include "inference/bounded_queue.h"
#include "inference/output_collisions.h"
#include "io/case_loader.h"

namespace fs = std::filesystem;

namespace medseg::inference {

std::vector<std::string> output_files(const std::string& folder, const std::string& id, const std::string& ending,
                                      bool save_probabilities) {
  const std::string base = (fs::path(folder) / id).string();
  std::vector<std::string> f{base + ending};
  if (save_probabilities) {
    f.push_back(base + "_probabilities.npy");
    f.push_back(base + "_probabilities.json");
  }
  return f;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Prepared {
  std::size_t index = 0;
  std::optional<preprocessing::PreprocessedCaseData> data;
  std::string error;
};

struct Predicted {
  std::size_t index = 0;
  at::Tensor logits;
  preprocessing::CaseProperties props;
};

// Shared bookkeeping of one run; every member function is thread-safe.
class Ledger {
 public:
  Ledger(const std::vector<CaseInput>& cases, RunSummary& s, int64_t todo, bool progress)
      : cases_(cases), s_(s), bar_("predict", todo, progress) {}
  void fail(std::size_t i, const std::string& why) {
    std::lock_guard<std::mutex> lk(mu_);
    spdlog::error("case '{}' failed: {}", cases_[i].id, why);
    s_.failed.emplace_back(cases_[i].id, why);
    bar_.tick();
  }
  void done(std::size_t i, double secs) {
    std::lock_guard<std::mutex> lk(mu_);
    spdlog::debug("case '{}' written ({:.2f} s export)", cases_[i].id, secs);
    ++s_.written;
    bar_.tick();
  }
  void add_predict_time(double secs) {
    std::lock_guard<std::mutex> lk(mu_);
    s_.predict_seconds += secs;
  }
  void finish() { bar_.finish(); }

 private:
  const std::vector<CaseInput>& cases_;
  RunSummary& s_;
  ProgressBar bar_;
  std::mutex mu_;
};

bool outputs_exist(const RunOptions& o, const std::string& id) {
  for (const auto& f : output_files(o.output_folder, id, o.file_ending, o.save_probabilities))
    if (!fs::exists(f)) return false;
  return true;
}

}  // namespace

RunSummary predict_cases(Predictor& predictor, const std::vector<CaseInput>& cases, const RunOptions& o) {
  const auto t0 = Clock::now();
  RunSummary summary;
  refuse_overwriting_inputs(cases, cases, o);
  fs::create_directories(o.output_folder);
  std::vector<std::size_t> todo;
  std::vector<std::pair<std::size_t, std::string>> listing_errors;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!cases[i].error.empty()) {
      listing_errors.emplace_back(i, cases[i].error);
    } else if (o.continue_prediction && outputs_exist(o, cases[i].id)) {
      ++summary.skipped;
    } else {
      todo.push_back(i);
    }
  }
  if (summary.skipped) spdlog::info("{} case(s) already predicted, skipped (--continue_prediction)", summary.skipped);
  Ledger ledger(cases, summary, static_cast<int64_t>(todo.size() + listing_errors.size()), o.progress);
  for (const auto& [i, why] : listing_errors) ledger.fail(i, why);

  ExportOptions eo = predictor.export_defaults();
  eo.save_probabilities = o.save_probabilities;
  eo.threads = std::max(1, o.export_threads);
  eo.postprocessing = o.postprocessing;

  auto prepare = [&](std::size_t i) {
    Prepared p;
    p.index = i;
    try {
      p.data = predictor.preprocess(io::load_case({cases[i].id, cases[i].images, ""}));
    } catch (const std::exception& e) {
      p.error = one_line(e.what());
    }
    return p;
  };
  auto do_export = [&](Predicted p) {
    const auto t = Clock::now();
    try {
      const std::string base = (fs::path(o.output_folder) / cases[p.index].id).string();
      export_prediction(p.logits, p.props, predictor.labels(), eo, base, o.file_ending);
      ledger.done(p.index, seconds_since(t));
    } catch (const std::exception& e) {
      ledger.fail(p.index, std::string("export: ") + one_line(e.what()));
    }
  };

  BoundedQueue<Predicted> export_q(static_cast<std::size_t>(std::max(1, o.nps)));
  BoundedQueue<Prepared> prep_q(static_cast<std::size_t>(std::max(1, o.npp)));
  std::vector<std::thread> exporters, producers;
  std::atomic<std::size_t> next{0};
  std::atomic<int> producers_left{o.npp};
  for (int k = 0; k < o.nps; ++k)
    exporters.emplace_back([&] {
      while (auto item = export_q.pop()) do_export(std::move(*item));
    });
  for (int k = 0; k < o.npp; ++k)
    producers.emplace_back([&] {
      for (;;) {
        const std::size_t j = next.fetch_add(1);
        if (j >= todo.size() || !prep_q.push(prepare(todo[j]))) break;
      }
      if (producers_left.fetch_sub(1) == 1) prep_q.close();
    });

  auto predict_one = [&](Prepared p) {
    if (!p.error.empty()) return ledger.fail(p.index, p.error);
    Predicted r;
    r.index = p.index;
    r.props = std::move(p.data->properties);
    const auto t = Clock::now();
    try {
      r.logits = predictor.predict_logits(p.data->arrays);
    } catch (const std::exception& e) {
      return ledger.fail(p.index, std::string("prediction: ") + one_line(e.what()));
    }
    ledger.add_predict_time(seconds_since(t));
    p.data.reset();  // the preprocessed image is no longer needed
    if (o.nps > 0)
      export_q.push(std::move(r));
    else
      do_export(std::move(r));
  };

  auto stop_all = [&] {
    prep_q.close();
    export_q.close();
    for (auto& t : producers) t.join();
    for (auto& t : exporters) t.join();
  };
  try {
    if (o.npp == 0) {
      for (std::size_t i : todo) predict_one(prepare(i));
    } else {
      while (auto item = prep_q.pop()) predict_one(std::move(*item));
    }
  } catch (...) {
    stop_all();
    throw;
  }
  stop_all();
  ledger.finish();
  summary.seconds = seconds_since(t0);
  return summary;
}

}  // namespace medseg::inference
