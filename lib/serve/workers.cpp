#include "serve/workers.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <filesystem>
#include <map>

#include "visualization/overlay.h"

namespace fs = std::filesystem;

namespace medseg::serve {

struct Workers::Loaded {
  std::map<std::string, std::unique_ptr<api::Segmenter>> models;  // by served name
};

namespace {

api::SegmenterOptions segmenter_options(const ServeOptions& o) {
  api::SegmenterOptions so;
  so.device = o.device;
  so.amp = o.amp;
  so.folds = o.folds;
  return so;  // threads: the process's torch setting, made once by the program
}

// The segmentation files by format: "_rtstruct.dcm" is an RT Structure Set, ".dcm" a DICOM SEG, the rest the
// model's file_ending ("nifti"); the overlay picture is not among them.
std::map<std::string, std::string> formats_of(const std::vector<std::string>& files) {
  std::map<std::string, std::string> m;
  const auto ends = [](const std::string& f, const std::string& e) {
    return f.size() >= e.size() && f.compare(f.size() - e.size(), e.size(), e) == 0;
  };
  for (const std::string& f : files) {
    if (fs::path(f).parent_path().filename() == "overlays") continue;
    m[ends(f, "_rtstruct.dcm") ? "rtstruct" : ends(f, ".dcm") ? "dicom_seg" : "nifti"] = f;
  }
  return m;
}

// The overlay picture among the files segment_files wrote ("" when none was drawn).
std::string overlay_of(const std::vector<std::string>& files) {
  for (const std::string& f : files)
    if (fs::path(f).parent_path().filename() == "overlays") return f;
  return "";
}

// The error line a client sees: the first line, without the server's scratch paths (a client never learns
// the server's file system); the uploaded file keeps its name (case_0000.nii.gz).
std::string scrub(std::string why, const std::string& folder) {
  why = why.substr(0, why.find('\n'));
  for (const std::string& p : {(fs::path(folder) / "input").string() + "/", folder + "/", folder}) {
    for (auto at = why.find(p); at != std::string::npos; at = why.find(p, at)) why.erase(at, p.size());
  }
  return why;
}

}  // namespace

Workers::Workers(const ServeOptions& o, JobStore& store) : store_(store) {
  // Loaded on this thread, one set per worker: a Segmenter runs one case at a time.
  for (int w = 0; w < o.workers; ++w) {
    auto l = std::make_unique<Loaded>();
    for (const ServedModel& m : o.models) {
      l->models[m.name] = std::make_unique<api::Segmenter>(m.folder, segmenter_options(o));
      if (w == 0) descriptions_.push_back(l->models[m.name]->description());
    }
    loaded_.push_back(std::move(l));
  }
  for (auto& l : loaded_) threads_.emplace_back([this, &l] { run(*l); });
}

Workers::~Workers() { join(); }

void Workers::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Workers::run(Loaded& w) {
  while (auto job = store_.next()) {
    const std::string id = job->first;
    const JobInput& in = job->second;
    api::FileOptions fo;
    fo.output_format = in.output_format;
    fo.every_format = true;  // a DICOM series' job: the client picks NIfTI, SEG or RTSTRUCT when fetching
    fo.overlays = visualization::overlays_available();  // the page shows it; a build without cairo has none
    fo.progress = [&](double f) { return store_.progress(id, f); };
    const std::string out = (fs::path(in.folder) / "output").string();
    try {
      const std::vector<std::string> files = w.models.at(in.model)->segment_files(in.files, out, fo);
      std::error_code ec;
      fs::remove_all(fs::path(in.folder) / "input", ec);  // the upload is no longer needed
      store_.done(id, files.front(), formats_of(files), overlay_of(files));
    } catch (const Cancelled&) { store_.cancelled(id); } catch (const std::exception& e) {
      const std::string why = scrub(e.what(), in.folder);
      spdlog::warn("job {} failed: {}", id, why);
      store_.failed(id, why);
    }
  }
}

}  // namespace medseg::serve
