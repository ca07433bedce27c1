#include "serve/submit.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "io/nifti_check.h"
#include "serve/http_server.h"
#include "serve/upload.h"

namespace fs = std::filesystem;

namespace medseg::serve {

namespace {

// The request's refusal as (status, message); status 0: none.
struct Refusal {
  int status = 0;
  std::string message;
  int retry_after_s = 0;
};

// Holds a queue reservation and a job folder until the job is submitted; otherwise gives both back.
class PendingJob {
 public:
  PendingJob(JobStore& store, int64_t bytes, const std::string& scratch) : store_(store), bytes_(bytes) {
    store.reserve(bytes);  // throws QueueFull / NoScratch
    std::random_device rd;
    folder_ = concat(scratch, "/job-", rd(), rd());
    fs::create_directories(fs::path(folder_) / "input");
    ::chmod(folder_.c_str(), 0700);
  }
  ~PendingJob() {
    if (submitted_) return;
    std::error_code ec;
    fs::remove_all(folder_, ec);
    store_.release(bytes_);
  }
  PendingJob(const PendingJob&) = delete;
  PendingJob& operator=(const PendingJob&) = delete;

  std::string input() const { return folder_ + "/input"; }
  std::string submit(JobInput in) {
    in.folder = folder_;
    in.bytes = bytes_;
    const std::string id = store_.submit(std::move(in));
    submitted_ = true;
    return id;
  }

 private:
  JobStore& store_;
  int64_t bytes_;
  std::string folder_;
  bool submitted_ = false;
};

Refusal check_request(const httplib::Request& req, const RouteContext& c, const std::string& model, int64_t* declared) {
  if (c.stopping) return {503, "the server is stopping and takes no new jobs", 0};
  if (!c.models.count(model)) return {404, "no model '" + model.substr(0, 200) + "' (GET /v1/models lists them)", 0};
  const std::string format = req.has_param("format") ? req.get_param_value("format") : "auto";
  if (!known_format(format))
    return {400, "format '" + format.substr(0, 50) + "': use auto, nifti, dicom_seg or rtstruct", 0};
  *declared = -1;
  if (req.has_header("Content-Length")) {
    const std::string v = req.get_header_value("Content-Length");
    errno = 0;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE)
      return {400, "Content-Length '" + v.substr(0, 30) + "' is not a size", 0};
    // A multipart body carries boundaries and part headers besides the files: 64 KiB of slack.
    if (n > static_cast<unsigned long long>(c.options.max_upload_bytes) + 65536)
      return {413,
              concat("the body's ", n, " bytes are over the server's limit of ", c.options.max_upload_bytes >> 20,
                     " MB (--max_upload_mb)"),
              0};
    *declared = static_cast<int64_t>(n);
  }
  return {};
}

// Reads the body (one file, or one part per channel) into `folder` within the time limit.
std::vector<std::string> read_upload(const httplib::Request& req, const httplib::ContentReader& reader,
                                     const RouteContext& c, const std::string& folder, Refusal* refusal) {
  UploadWriter w(folder, c.options.max_upload_bytes);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(c.options.upload_timeout_s);
  bool late = false;
  auto receive = [&](const char* data, size_t n) {
    if (std::chrono::steady_clock::now() > deadline) {
      late = true;
      return false;
    }
    return w.write(data, n);
  };
  const bool ok = req.is_multipart_form_data() ? reader(
                                                     [&](const httplib::MultipartFormData&) {
                                                       w.begin_part();
                                                       return true;
                                                     },
                                                     receive)
                                               : reader(receive);
  if (w.too_large()) {
    *refusal = {
        413,
        concat("the upload is over the server's limit of ", c.options.max_upload_bytes >> 20, " MB (--max_upload_mb)"),
        0};
    return {};
  }
  if (late) {
    *refusal = {408, concat("the upload took longer than ", c.options.upload_timeout_s, " s (--upload_timeout_s)"), 0};
    return {};
  }
  if (!ok) {
    *refusal = {400, "the request body could not be read (connection closed, or a malformed multipart body)", 0};
    return {};
  }
  try {
    return w.finish();
  } catch (const Error& e) {
    *refusal = {400, e.what(), 0};
    return {};
  }
}

// The upload is what the model takes: its channel count, and NIfTI files that are whole and sane (a header
// that promises more voxels than the file holds, a broken gzip stream, NaN geometry: io/nifti_check.h).
Refusal check_upload(const std::vector<std::string>& files, const api::ModelDescription& m) {
  const bool zip = files.size() == 1 && fs::path(files[0]).extension() == ".zip";
  if (!zip && files.size() != m.channels.size())
    return {400,
            concat("the upload has ", files.size(), " channel(s), the model takes ", m.channels.size(),
                   " (send one multipart part per channel)"),
            0};
  for (std::size_t k = 0; k < files.size(); ++k) {
    if (fs::path(files[k]).extension() == ".zip" && files.size() > 1)
      return {400, "a zip of a DICOM series comes alone, not as one of several parts", 0};
    try {
      io::check_nifti_complete(files[k]);
    } catch (const std::exception& e) {
      std::string why = e.what();
      const std::string path = files[k] + ": ";
      if (why.rfind(path, 0) == 0) why = why.substr(path.size());  // never a server path in an answer
      return {400, concat("channel ", k, ": ", why.substr(0, why.find('\n'))), 0};
    }
  }
  return {};
}

// Also closes the connection: the body may be partly or not at all read.
void refuse(httplib::Response& res, const Refusal& r) {
  close_connection_after_answer();
  res.set_header("Connection", "close");
  json_error(res, r.status, r.message);
  if (r.retry_after_s > 0) res.set_header("Retry-After", std::to_string(r.retry_after_s));
}

}  // namespace

void add_submit_route(httplib::Server& server, RouteContext& c) {
  server.Post("/v1/models/(.+)/jobs", [&c](const httplib::Request& req, httplib::Response& res,
                                           const httplib::ContentReader& reader) {
    const std::string model = req.matches[1];
    int64_t declared = -1;
    Refusal r = check_request(req, c, model, &declared);
    if (r.status) return refuse(res, r);
    std::unique_ptr<PendingJob> job;
    try {
      job = std::make_unique<PendingJob>(c.store, declared >= 0 ? declared : c.options.max_upload_bytes, c.scratch);
    } catch (const QueueFull& e) { return refuse(res, {429, e.what(), 5}); } catch (const NoScratch& e) {
      return refuse(res, {507, e.what(), 0});
    }
    const std::vector<std::string> files = read_upload(req, reader, c, job->input(), &r);
    if (r.status) return refuse(res, r);
    r = check_upload(files, c.models.at(model));
    if (r.status) return refuse(res, r);
    JobInput in;
    in.model = model;
    in.files = files;
    in.output_format = req.has_param("format") ? req.get_param_value("format") : "auto";
    const std::string id = job->submit(std::move(in));
    res.set_header("Location", "/v1/jobs/" + id);
    res.status = 202;
    res.set_content(nlohmann::json{{"id", id}, {"state", "queued"}}.dump() + "\n", "application/json");
  });
}

}  // namespace medseg::serve
