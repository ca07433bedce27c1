#pragma once
// The prediction threads of medseg_serve: each loads every served model once (api::Segmenter) and then
// runs jobs from the store, one at a time, as medseg_predict would run the case (Segmenter::segment_files).
// A job that throws fails alone; the thread takes the next one.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/segmenter.h"
#include "serve/jobs.h"
#include "serve/options.h"

namespace medseg::serve {

class Workers {
 public:
  // Starts o.workers threads and waits until each has loaded every model. Throws Error (naming the
  // model folder) when one cannot be loaded; no thread is left running then.
  Workers(const ServeOptions& o, JobStore& store);
  ~Workers();  // joins the threads (close the store first)
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Each model's description, in the order of o.models.
  const std::vector<api::ModelDescription>& models() const { return descriptions_; }
  void join();

 private:
  struct Loaded;
  void run(Loaded& w);

  JobStore& store_;
  std::vector<std::unique_ptr<Loaded>> loaded_;
  std::vector<std::thread> threads_;
  std::vector<api::ModelDescription> descriptions_;
};

}  // namespace medseg::serve
