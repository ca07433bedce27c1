#pragma once
// medseg_serve (docs/serve.md): trained models loaded once, segmentation jobs taken over HTTP, run by worker
// threads, and their results kept until fetched. The program makes one Service, runs it, and stops it from
// its signal thread.
#include <memory>

#include "serve/options.h"

namespace medseg::serve {

class Service {
 public:
  // Checks the options, loads every model on every worker, makes the private scratch folder (0700) and
  // binds the port. Throws Error with the reason (a model folder, a port in use, ...).
  explicit Service(ServeOptions o);
  ~Service();  // stops; the scratch folder is removed
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  int port() const;  // the bound port (--port 0: the one the system chose)
  // Serves until stop(). Then: no new job is taken (503), queued jobs are cancelled, running ones may
  // finish for stop_grace_s and are cancelled after that; the connections close and run() returns.
  void run();
  void stop();  // from any thread

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medseg::serve
