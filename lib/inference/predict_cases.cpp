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

}  // namespace

RunSummary predict_cases(Predictor& predictor, const std::vector<CaseInput>& cases, const RunOptions& o) {
  const auto t0 = Clock::now();
  RunSummary summary;
  refuse_overwriting_inputs(cases, cases, o);
  fs::create_directories(o.output_folder);
  if (o.overlays) create_overlay_folder(o.output_folder);
  std::vector<std::size_t> todo;
  std::vector<std::pair<std::size_t, std::string>> listing_errors;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!cases[i].error.empty()) {
      listing_errors.emplace_back(i, cases[i].error);
    } else if ((o.output_format == "dicom_seg" || o.output_format == "rtstruct") &&
               dicom_output(cases[i], o) == DicomOutput::None) {
      listing_errors.emplace_back(i, cases[i].images.at(0) +
                                         ": not a DICOM series, so there is no series for a "
                                         "DICOM object to reference (--output_format " +
                                         o.output_format + ")");
    } else if (o.continue_prediction && outputs_exist(o, cases[i])) {
      ++summary.skipped;
    } else {
      todo.push_back(i);
    }
  }
  distributed::ProcessGroup* group = predictor.group();
  if (group) adopt_rank0_todo(*group, todo, summary.skipped);
  if (summary.skipped) spdlog::info("{} case(s) already predicted, skipped (--continue_prediction)", summary.skipped);
  Ledger ledger(cases, summary, static_cast<int64_t>(todo.size() + listing_errors.size()), o.progress,
                group && group->rank() != 0);
  for (const auto& [i, why] : listing_errors) ledger.fail(i, why);

  ExportOptions eo = predictor.export_defaults();
  eo.save_probabilities = o.save_probabilities;
  eo.probabilities_npy = o.probabilities_npy;
  eo.probabilities_npz = o.probabilities_npz;
  eo.threads = std::max(1, o.export_threads);
  eo.postprocessing = o.postprocessing;

  auto prepare = [&](std::size_t i) {
    Prepared p;
    p.index = i;
    try {
      const CaseInput& c = cases[i];
      p.data = predictor.preprocess(
          io::load_case({c.id, c.images, c.previous_stage}, predictor.reorients_to_ras(), series_uid_of(o, c.id)),
          c.previous_stage);
    } catch (const std::exception& e) { p.error = one_line(e.what()); }
    return p;
  };
  auto do_export = [&](Predicted p) {
    const auto t = Clock::now();
    try {
      const CaseInput& c = cases[p.index];
      const std::string base = (fs::path(o.output_folder) / c.id).string();
      std::vector<float> probs;
      std::vector<float>* wanted = eo.save_probabilities ? &probs : nullptr;
      const DicomOutput dicom = dicom_output(c, o);
      const bool every = o.every_format && !c.images.empty() && io::is_dicom_folder(c.images[0]);
      ExportOptions ceo = eo;
      ceo.write_segmentation = dicom == DicomOutput::None || every;
      const Volume seg = write_prediction(predictor.segmentation(std::move(p.prediction), p.props, eo, wanted), wanted,
                                          predictor.labels(), ceo, base, o.file_ending);
      if (dicom == DicomOutput::Seg || every)
        io::write_dicom_seg(base + ".dcm", seg, c.images[0], series_uid_of(o, c.id), o.dicom_seg);
      if (dicom == DicomOutput::RtStruct || every)
        io::write_dicom_rtstruct(base + "_rtstruct.dcm", seg, c.images[0], series_uid_of(o, c.id), o.dicom_seg);
      if (o.overlays)
        write_prediction_overlay(cases[p.index].images.at(0), seg, predictor.model().dataset, o.output_folder,
                                 cases[p.index].id);
      ledger.done(p.index, seconds_since(t));
    } catch (const std::exception& e) { ledger.fail(p.index, std::string("export: ") + one_line(e.what())); }
  };

  // Producer k prepares cases k, k + npp, ... into its own queue of one, and the predict stage takes
  // them in order: the order of the cases is the listing's on every rank (ranks that share tiles
  // must agree), and host memory stays bounded as before.
  BoundedQueue<Predicted> export_q(static_cast<std::size_t>(std::max(1, o.nps)));
  std::vector<std::unique_ptr<BoundedQueue<Prepared>>> prep_q;
  for (int k = 0; k < o.npp; ++k) prep_q.push_back(std::make_unique<BoundedQueue<Prepared>>(1));
  std::vector<std::thread> exporters, producers;
  for (int k = 0; k < o.nps; ++k)
    exporters.emplace_back([&] {
      while (auto item = export_q.pop()) do_export(std::move(*item));
    });
  for (int k = 0; k < o.npp; ++k)
    producers.emplace_back([&, k] {
      for (std::size_t j = static_cast<std::size_t>(k); j < todo.size(); j += static_cast<std::size_t>(o.npp))
        if (!prep_q[static_cast<std::size_t>(k)]->push(prepare(todo[j]))) break;
      prep_q[static_cast<std::size_t>(k)]->close();
    });

  auto predict_one = [&](Prepared p) {
    p.error = agreed_error(group, p.error);
    if (!p.error.empty()) return ledger.fail(p.index, p.error);
    Predicted r;
    r.index = p.index;
    r.props = std::move(p.data->properties);
    const auto t = Clock::now();
    try {
      r.prediction = predictor.predict_case(p.data->arrays, r.props, eo, cases[p.index].id);
    } catch (const distributed::PeerError&) {
      throw;  // a rank is gone: no later case can be predicted either
    } catch (const std::exception& e) { return ledger.fail(p.index, std::string("prediction: ") + one_line(e.what())); }
    ledger.add_predict_time(seconds_since(t));
    p.data.reset();  // the preprocessed image is no longer needed
    if (!r.prediction.logits.defined() && !r.prediction.seg)
      return;  // a rank other than 0 of a sharded prediction: rank 0 exports
    if (o.nps > 0)
      export_q.push(std::move(r));
    else
      do_export(std::move(r));
  };

  auto stop_all = [&] {
    for (auto& q : prep_q) q->close();
    export_q.close();
    for (auto& t : producers) t.join();
    for (auto& t : exporters) t.join();
  };
  try {
    if (o.npp == 0) {
      for (std::size_t i : todo) predict_one(prepare(i));
    } else {
      for (std::size_t j = 0; j < todo.size(); ++j) {
        auto item = prep_q[j % static_cast<std::size_t>(o.npp)]->pop();
        if (!item) break;
        predict_one(std::move(*item));
      }
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
