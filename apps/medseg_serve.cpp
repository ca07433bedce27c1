// medseg-app: itk
// medseg_serve: segmentation as a service (docs/serve.md): trained model folders loaded once, jobs over HTTP.
#include <pthread.h>
#include <sys/resource.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <thread>

#include "cli_common.h"
#include "core/amp.h"
#include "core/error.h"
#include "core_torch/torch_settings.h"
#include "serve/auth.h"
#include "serve/service.h"

using namespace medseg;

namespace {

struct ServeArgs {
  serve::ServeOptions o;
  std::vector<std::string> models;
  std::string token_file;
  std::string amp = "auto";
  double max_upload_mb = 1024, max_scratch_mb = 20480;
};

void declare(CLI::App& app, ServeArgs& a) {
  app.add_option("-m,--model", a.models,
                 "A trained model folder, served as DatasetXXX_Name/TRAINER__PLANS__CONFIG, or NAME=FOLDER; repeat "
                 "for more models")
      ->required();
  app.add_option("-f,--folds", a.o.folds, "Folds of every model (default: every fold_K present)");
  app.add_option("--host", a.o.host, "Address to listen on; other than loopback only with --token_file")
      ->capture_default_str();
  app.add_option("--port", a.o.port, "TCP port (0: any free one, printed at start)")->capture_default_str();
  app.add_option("--token_file", a.token_file,
                 "File (mode 600) whose first line is the token every request must send as Authorization: Bearer");
  app.add_option("--workers", a.o.workers, "Prediction threads; each loads every model once")->capture_default_str();
  app.add_option("--threads", a.o.threads, "Torch CPU threads in all (default: MEDSEG_NUM_THREADS or the cores)");
  app.add_option("--max_queue", a.o.max_queue, "Jobs that may wait; one more is answered 429")->capture_default_str();
  app.add_option("--max_upload_mb", a.max_upload_mb, "Largest request body; larger is answered 413")
      ->capture_default_str();
  app.add_option("--max_scratch_mb", a.max_scratch_mb,
                 "Disk held by uploads and results at once; a job beyond it is answered 507")
      ->capture_default_str();
  app.add_option("--result_ttl_s", a.o.result_ttl_s, "Seconds a result stays after its first download")
      ->capture_default_str();
  app.add_option("--unfetched_ttl_s", a.o.unfetched_ttl_s, "Seconds an ended job nobody fetched stays")
      ->capture_default_str();
  app.add_option("--stop_grace_s", a.o.stop_grace_s,
                 "On SIGTERM/SIGINT, seconds running jobs may finish before they are cancelled")
      ->capture_default_str();
  app.add_option("--read_timeout_s", a.o.read_timeout_s, "Seconds one read of a request may wait")
      ->capture_default_str();
  app.add_option("--upload_timeout_s", a.o.upload_timeout_s, "Seconds a whole upload may take")->capture_default_str();
  app.add_option("--max_connections", a.o.max_connections, "Connections served at once")->capture_default_str();
  app.add_option("--scratch", a.o.scratch_parent, "Folder for the private scratch folder (default: TMPDIR)");
  app.add_option("--device", a.o.device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--amp", a.amp,
                 "The network's precision: auto (fp16 on CUDA, bf16 on a CPU with bf16 units, else fp32), fp16, bf16, "
                 "off (fp32, nnU-Net's arithmetic)")
      ->capture_default_str();
}

std::vector<serve::ServedModel> parse_models(const std::vector<std::string>& args) {
  std::vector<serve::ServedModel> models;
  for (const std::string& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos)
      models.push_back({serve::default_model_name(a), a});
    else
      models.push_back({a.substr(0, eq), a.substr(eq + 1)});
  }
  return models;
}

// SIGINT/SIGTERM are blocked in every thread and taken by one that stops the service (a handler could not
// call into it safely); it is started before any other thread, so they all inherit the mask.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Each connection is a socket: the soft limit on open files (often 1024) is raised to the hard one, and a hard
// limit too small for --max_connections is said at start rather than found as refused connections.
void raise_open_file_limit(int max_connections) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  r.rlim_cur = r.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &r);
  const rlim_t wanted = static_cast<rlim_t>(max_connections) + 256;  // + model files, logs, uploads
  if (r.rlim_max != RLIM_INFINITY && r.rlim_max < wanted)
    spdlog::warn("open files are limited to {} (ulimit -n): fewer than --max_connections {} needs", r.rlim_max,
                 max_connections);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Serve trained models over HTTP (docs/serve.md)", "medseg_serve"};
  ServeArgs a;
  declare(app, a);
  return cli::run(argc, argv, app, [&] {
    const sigset_t stop_signals = block_stop_signals();
    raise_open_file_limit(a.o.max_connections);
    a.o.models = parse_models(a.models);
    a.o.amp = parse_amp(a.amp, "--amp");
    if (!a.token_file.empty()) a.o.token = serve::read_token_file(a.token_file);
    a.o.max_upload_bytes = static_cast<int64_t>(a.max_upload_mb * 1024 * 1024);
    a.o.max_scratch_bytes = static_cast<int64_t>(a.max_scratch_mb * 1024 * 1024);
    if (a.o.threads <= 0) a.o.threads = std::max(1, cli::default_threads() / std::max(1, a.o.workers));
    ScopedTorchSettings torch({a.o.threads, false, false, {}});
    serve::Service service(a.o);
    std::printf("medseg_serve: %zu model(s), %d worker(s), listening on http://%s:%d/\n", a.o.models.size(),
                a.o.workers, a.o.host.c_str(), service.port());
    std::fflush(stdout);
    std::thread signals([&] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      spdlog::info("signal {}: stopping (running jobs get {} s)", sig, a.o.stop_grace_s);
      service.stop();
    });
    service.run();
    // run() returned on a signal: the signal thread is done. (run() returns on nothing else.)
    signals.join();
    std::printf("medseg_serve: stopped\n");
    return 0;
  });
}
