#include "inference/predict_cases.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <memory>
#include <thread>

#include "core/error.h"
#include "distributed/process_group.h"
#include "core/strings.h"
#include "core/log.h"
#include "core/progress.h"
#include "inference/bounded_queue.h"
#include "inference/output_collisions.h"
#include "inference/overlays.h"
#include "io/case_loader.h"
#include "io/dicom_series.h"

namespace fs = std::filesystem;

namespace medseg::inference {

std::vector<std::string> output_files(const std::string& folder, const std::string& id, const std::string& ending,
                                      bool save_probabilities, bool overlays, bool npy, bool npz) {
  const std::string base = (fs::path(folder) / id).string();
  std::vector<std::string> f{base + ending};
  if (save_probabilities && npy) {
    f.push_back(base + "_probabilities.npy");
    f.push_back(base + "_probabilities.json");
  }
  if (save_probabilities && npz) f.push_back(base + ".npz");
  if (overlays) f.push_back(overlay_file(folder, id));
  return f;
}

void parse_series_uids(const std::vector<std::string>& values, RunOptions& o) {
  for (const std::string& v : values) {
    const auto eq = v.find('=');
    if (eq == std::string::npos) {
      MEDSEG_CHECK(o.series_uid.empty(), "--series_uid ", v, ": a second UID for every case (the first was ",
                   o.series_uid, "); name the case: --series_uid CASE=UID");
      MEDSEG_CHECK(!v.empty(), "--series_uid: an empty UID");
      o.series_uid = v;
      continue;
    }
    const std::string id = v.substr(0, eq), uid = v.substr(eq + 1);
    MEDSEG_CHECK(!id.empty() && !uid.empty(), "--series_uid ", v, ": expected CASE=UID");
    MEDSEG_CHECK(o.case_series_uid.emplace(id, uid).second, "--series_uid names case '", id, "' twice");
  }
}

const std::string& series_uid_of(const RunOptions& o, const std::string& id) {
  const auto it = o.case_series_uid.find(id);
  return it == o.case_series_uid.end() ? o.series_uid : it->second;
}

void check_series_uid_cases(const RunOptions& o, const std::vector<CaseInput>& cases) {
  for (const auto& [id, uid] : o.case_series_uid) {
    const bool held = std::any_of(cases.begin(), cases.end(), [&](const CaseInput& c) { return c.id == id; });
    MEDSEG_CHECK(held, "--series_uid ", id, "=", uid, ": the input holds no case '", id, "'");
  }
}

DicomOutput dicom_output(const CaseInput& c, const RunOptions& o) {
  if (o.output_format == "nifti" || c.images.empty() || !io::is_dicom_folder(c.images[0])) return DicomOutput::None;
  return o.output_format == "rtstruct" ? DicomOutput::RtStruct : DicomOutput::Seg;
}

std::string segmentation_ending(const CaseInput& c, const RunOptions& o) {
  switch (dicom_output(c, o)) {
    case DicomOutput::Seg: return ".dcm";
    case DicomOutput::RtStruct: return "_rtstruct.dcm";
    case DicomOutput::None: break;
  }
  return o.file_ending;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Prepared {
  std::size_t index = 0;
  std::optional<preprocessing::PreprocessedCaseData> data;
  std::string error;
};

// A predicted case for the export stage: whole logits to export, or (predicted in slabs) the
// segmentation and probabilities already made, to write.
struct Predicted {
  std::size_t index = 0;
  preprocessing::CaseProperties props;
  Predictor::CasePrediction prediction;
};

// Shared bookkeeping of one run; every member function is thread-safe.
class Ledger {
 public:
  // `quiet`: a rank other than 0 of a sharded prediction (rank 0 reports every failure).
  Ledger(const std::vector<CaseInput>& cases, RunSummary& s, int64_t todo, bool progress, bool quiet)
      : cases_(cases), s_(s), bar_("predict", todo, progress), quiet_(quiet) {}
  void fail(std::size_t i, const std::string& why) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!quiet_) spdlog::error("case '{}' failed: {}", cases_[i].id, why);
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
  bool quiet_;
  std::mutex mu_;
};

bool outputs_exist(const RunOptions& o, const CaseInput& c) {
  for (const auto& f : output_files(o.output_folder, c.id, segmentation_ending(c, o), o.save_probabilities, o.overlays,
                                    o.probabilities_npy, o.probabilities_npz))
    if (!fs::exists(f)) return false;
  return true;
}

// Ranks sharing the tiles must predict the same cases in the same order: rank 0's listing decides
// (its --continue_prediction check may see files a moment before the others do).
void adopt_rank0_todo(distributed::ProcessGroup& group, std::vector<std::size_t>& todo, int& skipped) {
  std::string mine = std::to_string(skipped);
  for (std::size_t i : todo) mine += "," + std::to_string(i);
  const std::string first = group.all_gather(mine)[0];
  todo.clear();
  std::size_t at = first.find(',');
  skipped = std::stoi(first.substr(0, at));
  while (at != std::string::npos) {
    const std::size_t next = first.find(',', at + 1);
    todo.push_back(static_cast<std::size_t>(std::stoull(first.substr(at + 1, next - at - 1))));
    at = next;
  }
}

// With ranks, a case is predicted only if it was prepared on every rank; otherwise every rank skips
// it and names the rank that failed.
std::string agreed_error(distributed::ProcessGroup* group, const std::string& mine) {
  if (!group) return mine;
  const auto all = group->all_gather(mine);
  if (!mine.empty()) return mine;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) return concat("rank ", r, ": ", all[r]);
  return "";
}

// What the listing leaves to do: the cases to predict, and the ones refused with the reason.
struct Todo {
  std::vector<std::size_t> cases;
  std::vector<std::pair<std::size_t, std::string>> refused;
};

Todo sort_cases(const std::vector<CaseInput>& cases, const RunOptions& o, RunSummary& summary) {
  Todo t;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!cases[i].error.empty()) {
      t.refused.emplace_back(i, cases[i].error);
    } else if ((o.output_format == "dicom_seg" || o.output_format == "rtstruct") &&
               dicom_output(cases[i], o) == DicomOutput::None) {
      t.refused.emplace_back(i, cases[i].images.at(0) +
                                    ": not a DICOM series, so there is no series for a "
                                    "DICOM object to reference (--output_format " +
                                    o.output_format + ")");
    } else if (o.continue_prediction && outputs_exist(o, cases[i])) {
      ++summary.skipped;
    } else {
      t.cases.push_back(i);
    }
  }
  return t;
}

// One run over the cases in three stages: prepare (read and preprocess; RunOptions::npp threads), predict (this
// thread, in the listing's order) and export (RunOptions::nps threads, or this one).
class CaseRun {
 public:
  CaseRun(Predictor& predictor, const std::vector<CaseInput>& cases, const RunOptions& o, Ledger& ledger)
      : predictor_(predictor),
        cases_(cases),
        o_(o),
        ledger_(ledger),
        eo_(predictor.export_defaults()),
        export_q_(static_cast<std::size_t>(std::max(1, o.nps))) {
    eo_.save_probabilities = o.save_probabilities;
    eo_.probabilities_npy = o.probabilities_npy;
    eo_.probabilities_npz = o.probabilities_npz;
    eo_.threads = std::max(1, o.export_threads);
    eo_.postprocessing = o.postprocessing;
  }

  void run(const std::vector<std::size_t>& todo) {
    start_threads(todo);
    try {
      if (o_.npp == 0) {
        for (std::size_t i : todo) predict(prepare(i));
      } else {
        for (std::size_t j = 0; j < todo.size(); ++j) {
          auto item = prep_q_[j % static_cast<std::size_t>(o_.npp)]->pop();
          if (!item) break;
          predict(std::move(*item));
        }
      }
    } catch (...) {
      stop_threads();
      throw;
    }
    stop_threads();
  }

 private:
  Prepared prepare(std::size_t i) const {
    Prepared p;
    p.index = i;
    try {
      const CaseInput& c = cases_[i];
      p.data = predictor_.preprocess(
          io::load_case({c.id, c.images, c.previous_stage}, predictor_.reorients_to_ras(), series_uid_of(o_, c.id)),
          c.previous_stage);
    } catch (const std::exception& e) { p.error = one_line(e.what()); }
    return p;
  }

  void predict(Prepared p) {
    p.error = agreed_error(predictor_.group(), p.error);
    if (!p.error.empty()) return ledger_.fail(p.index, p.error);
    Predicted r;
    r.index = p.index;
    r.props = std::move(p.data->properties);
    const auto t = Clock::now();
    try {
      r.prediction = predictor_.predict_case(p.data->arrays, r.props, eo_, cases_[p.index].id);
    } catch (const distributed::PeerError&) {
      throw;  // a rank is gone: no later case can be predicted either
    } catch (const std::exception& e) {
      return ledger_.fail(p.index, std::string("prediction: ") + one_line(e.what()));
    }
    ledger_.add_predict_time(seconds_since(t));
    p.data.reset();  // the preprocessed image is no longer needed
    if (!r.prediction.logits.defined() && !r.prediction.seg)
      return;  // a rank other than 0 of a sharded prediction: rank 0 exports
    if (o_.nps > 0)
      export_q_.push(std::move(r));
    else
      export_case(std::move(r));
  }

  // The segmentation in the case's output formats (and DICOM objects referencing its series), the probabilities
  // and the overlay picture as asked.
  void export_case(Predicted p) {
    const auto t = Clock::now();
    try {
      const CaseInput& c = cases_[p.index];
      const std::string base = (fs::path(o_.output_folder) / c.id).string();
      std::vector<float> probs;
      std::vector<float>* wanted = eo_.save_probabilities ? &probs : nullptr;
      const DicomOutput dicom = dicom_output(c, o_);
      const bool every = o_.every_format && !c.images.empty() && io::is_dicom_folder(c.images[0]);
      ExportOptions ceo = eo_;
      ceo.write_segmentation = dicom == DicomOutput::None || every;
      const Volume seg = write_prediction(predictor_.segmentation(std::move(p.prediction), p.props, eo_, wanted),
                                          wanted, predictor_.labels(), ceo, base, o_.file_ending);
      if (dicom == DicomOutput::Seg || every)
        io::write_dicom_seg(base + ".dcm", seg, c.images[0], series_uid_of(o_, c.id), o_.dicom_seg);
      if (dicom == DicomOutput::RtStruct || every)
        io::write_dicom_rtstruct(base + "_rtstruct.dcm", seg, c.images[0], series_uid_of(o_, c.id), o_.dicom_seg);
      if (o_.overlays)
        write_prediction_overlay(c.images.at(0), seg, predictor_.model().dataset, o_.output_folder, c.id);
      ledger_.done(p.index, seconds_since(t));
    } catch (const std::exception& e) { ledger_.fail(p.index, std::string("export: ") + one_line(e.what())); }
  }

  // Producer k prepares cases k, k + npp, ... into its own queue of one, and the predict stage takes
  // them in order: the order of the cases is the listing's on every rank (ranks that share tiles
  // must agree), and host memory stays bounded.
  void start_threads(const std::vector<std::size_t>& todo) {
    for (int k = 0; k < o_.npp; ++k) prep_q_.push_back(std::make_unique<BoundedQueue<Prepared>>(1));
    for (int k = 0; k < o_.nps; ++k)
      exporters_.emplace_back([this] {
        while (auto item = export_q_.pop()) export_case(std::move(*item));
      });
    for (int k = 0; k < o_.npp; ++k)
      producers_.emplace_back([this, k, &todo] {
        auto& q = *prep_q_[static_cast<std::size_t>(k)];
        for (std::size_t j = static_cast<std::size_t>(k); j < todo.size(); j += static_cast<std::size_t>(o_.npp))
          if (!q.push(prepare(todo[j]))) break;
        q.close();
      });
  }

  void stop_threads() {
    for (auto& q : prep_q_) q->close();
    export_q_.close();
    for (auto& t : producers_) t.join();
    for (auto& t : exporters_) t.join();
  }

  Predictor& predictor_;
  const std::vector<CaseInput>& cases_;
  const RunOptions& o_;
  Ledger& ledger_;
  ExportOptions eo_;
  BoundedQueue<Predicted> export_q_;
  std::vector<std::unique_ptr<BoundedQueue<Prepared>>> prep_q_;
  std::vector<std::thread> exporters_, producers_;
};

}  // namespace

RunSummary predict_cases(Predictor& predictor, const std::vector<CaseInput>& cases, const RunOptions& o) {
  const auto t0 = Clock::now();
  RunSummary summary;
  refuse_overwriting_inputs(cases, cases, o);
  fs::create_directories(o.output_folder);
  if (o.overlays) create_overlay_folder(o.output_folder);
  Todo todo = sort_cases(cases, o, summary);
  distributed::ProcessGroup* group = predictor.group();
  if (group) adopt_rank0_todo(*group, todo.cases, summary.skipped);
  if (summary.skipped) spdlog::info("{} case(s) already predicted, skipped (--continue_prediction)", summary.skipped);
  Ledger ledger(cases, summary, static_cast<int64_t>(todo.cases.size() + todo.refused.size()), o.progress,
                group && group->rank() != 0);
  for (const auto& [i, why] : todo.refused) ledger.fail(i, why);
  CaseRun(predictor, cases, o, ledger).run(todo.cases);
  ledger.finish();
  summary.seconds = seconds_since(t0);
  return summary;
}

}  // namespace medseg::inference
