#pragma once
// medseg_serve's settings (docs/serve.md), as its flags give them.
#include <cstdint>
#include <string>
#include <vector>

#include "core/amp.h"

namespace medseg::serve {

struct ServedModel {
  std::string name;    // how requests name it: -m NAME=FOLDER, or DatasetXXX_Name/TRAINER__PLANS__CONFIG
  std::string folder;  // the trained model folder
};

struct ServeOptions {
  std::vector<ServedModel> models;
  std::string host = "127.0.0.1";
  int port = 8080;    // 0: any free port (printed at start)
  std::string token;  // "" (loopback only) or the bearer token every request must carry
  int workers = 1;    // prediction threads; each loads every model once
  int threads = 0;    // torch threads in all (0: the machine's default)
  std::string device = "cpu";
  AmpMode amp = AmpMode::Auto;                // the network's precision (api::SegmenterOptions::amp)
  std::vector<std::string> folds;             // of every model; empty: every fold_K present
  std::size_t max_queue = 16;                 // jobs waiting; one more gets 429
  int64_t max_upload_bytes = 1024LL << 20;    // one request body; more gets 413
  int64_t max_scratch_bytes = 20480LL << 20;  // uploads + results held at once; more gets 507
  double result_ttl_s = 600;                  // a fetched result goes this long after its first fetch
  double unfetched_ttl_s = 86400;             // an ended job nobody fetched goes after this long
  double stop_grace_s = 30;                   // SIGTERM: running jobs may finish this long, then are cancelled
  int read_timeout_s = 10;                    // each read of a request's headers or body
  int upload_timeout_s = 300;                 // a whole upload
  int keep_alive_timeout_s = 5;               // an idle kept-alive connection
  int max_connections = 1024;                 // connections served at once; more wait for one to end
  std::string scratch_parent;                 // where the private scratch folder goes ("": the system's temp folder)
};

// Why `o` may not start, or "": a model named twice or badly, a non-loopback host without a token, ...
std::string check_options(const ServeOptions& o);

// The name a model folder is served under: its last two path components, DatasetXXX_Name/TRAINER__PLANS__CONFIG.
std::string default_model_name(const std::string& folder);

// True for 127.0.0.0/8, ::1 and "localhost": the only hosts served without a token.
bool is_loopback(const std::string& host);

}  // namespace medseg::serve
