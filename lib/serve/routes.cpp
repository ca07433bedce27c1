#include "serve/routes.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <vector>
#include <nlohmann/json.hpp>

#include "serve/assets.h"
#include "serve/auth.h"
#include "serve/metrics.h"
#include "serve/submit.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace medseg::serve {

bool known_format(const std::string& format) {
  return format == "auto" || format == "nifti" || format == "dicom_seg" || format == "rtstruct";
}

void json_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  std::string line = message.substr(0, message.find('\n'));
  res.set_content(json{{"error", line}}.dump() + "\n", "application/json");
}

namespace {

const char* kIdPattern = "([0-9a-f]{32})";

void send_json(httplib::Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump() + "\n", "application/json");
}

json job_json(const JobView& v) {
  json j = {{"id", v.id},
            {"model", v.model},
            {"state", state_name(v.state)},
            {"progress", v.progress},
            {"seconds", v.seconds}};
  if (v.state == JobState::Failed) j["error"] = v.error;
  if (v.state == JobState::Done) {
    j["result"] = "/v1/jobs/" + v.id + "/result";
    if (!v.overlay_file.empty()) j["overlay"] = "/v1/jobs/" + v.id + "/overlay";
  }
  return j;
}

json model_json(const std::string& name, const api::ModelDescription& d) {
  json labels = json::object();
  for (const auto& [label, values] : d.labels) labels[label] = values.size() == 1 ? json(values[0]) : json(values);
  return {{"name", name},     {"configuration", d.configuration}, {"folds", d.folds}, {"channels", d.channels},
          {"labels", labels}, {"file_ending", d.file_ending}};
}

// Streams a file in 64 KiB pieces (a segmentation can be large; nothing is read into memory at once).
void send_file(httplib::Response& res, const std::string& file, const std::string& type, const std::string& name) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return json_error(res, 410, "the result is no longer on the server");
  auto in = std::make_shared<std::ifstream>(file, std::ios::binary);
  res.set_header("Content-Disposition", "attachment; filename=\"" + name + "\"");
  res.set_content_provider(static_cast<size_t>(size), type,
                           [in](size_t offset, size_t length, httplib::DataSink& sink) {
                             std::vector<char> buf(std::min<size_t>(length, 1 << 16));
                             in->seekg(static_cast<std::streamoff>(offset));
                             in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
                             const auto got = static_cast<size_t>(in->gcount());
                             return got > 0 && sink.write(buf.data(), got);
                           });
}

std::string result_type(const std::string& file) {
  if (file.size() >= 4 && file.compare(file.size() - 4, 4, ".dcm") == 0) return "application/dicom";
  if (file.size() >= 3 && file.compare(file.size() - 3, 3, ".gz") == 0) return "application/gzip";
  return "application/octet-stream";
}

// The result's download name: the job id and the segmentation's ending (".nii.gz", ".dcm", "_rtstruct.dcm").
std::string result_name(const JobView& v) {
  const std::string base = fs::path(v.result_file).filename().string();
  const auto dot = base.find('.');
  const auto rt = base.find("_rtstruct.");
  return v.id + base.substr(rt != std::string::npos ? rt : (dot == std::string::npos ? base.size() : dot));
}

// Runs a handler, turning the store's refusals into their statuses.
template <class F>
void guarded(httplib::Response& res, F&& f) {
  try {
    f();
  } catch (const UnknownJob& e) { json_error(res, 404, e.what()); } catch (const JobConflict& e) {
    json_error(res, 409, e.what());
  }
}

void add_job_routes(httplib::Server& s, RouteContext& c) {
  const std::string job = std::string("/v1/jobs/") + kIdPattern;
  s.Get(job, [&c](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { send_json(res, job_json(c.store.view(req.matches[1]))); });
  });
  s.Get(job + "/result", [&c](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      JobView v = c.store.fetch(req.matches[1]);
      const std::string format = req.has_param("format") ? req.get_param_value("format") : "auto";
      if (!known_format(format))
        return json_error(res, 400, "format '" + format.substr(0, 50) + "': use auto, nifti, dicom_seg or rtstruct");
      if (format != "auto") {
        const auto it = v.results.find(format);
        if (it == v.results.end())
          return json_error(
              res, 409,
              "job '" + v.id + "' has no " + format + " result: DICOM objects are made for a DICOM series' job only");
        v.result_file = it->second;
      }
      send_file(res, v.result_file, result_type(v.result_file), result_name(v));
    });
  });
  s.Get(job + "/overlay", [&c](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      const JobView v = c.store.view(req.matches[1]);
      if (v.overlay_file.empty()) return json_error(res, 404, "job '" + v.id + "' has no overlay picture");
      send_file(res, v.overlay_file, "image/png", v.id + ".png");
    });
  });
  s.Delete(job, [&c](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      const JobState after = c.store.cancel(req.matches[1]);
      send_json(res, {{"id", req.matches[1]}, {"state", after == JobState::Cancelled ? "cancelled" : "cancelling"}},
                after == JobState::Cancelled ? 200 : 202);
    });
  });
  s.Get("/v1/jobs/(.*)", [](const httplib::Request&, httplib::Response& res) {
    json_error(res, 404, "no such job (a job id is 32 hexadecimal digits)");
  });
}

void add_info_routes(httplib::Server& s, RouteContext& c) {
  s.Get("/v1/health", [&c](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"status", c.stopping ? "stopping" : "ok"},
                    {"workers", c.options.workers},
                    {"queue_length", c.store.queued()}});
  });
  s.Get("/v1/models", [&c](const httplib::Request&, httplib::Response& res) {
    json list = json::array();
    for (const ServedModel& m : c.options.models) list.push_back(model_json(m.name, c.models.at(m.name)));
    send_json(res, {{"models", list}});
  });
  s.Get("/v1/metrics", [&c](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus_text(c.store.counts(), c.store.queued(), resident_bytes(), c.options.workers),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/v1/openapi.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(openapi_document(), "application/json");
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' blob:");
    res.set_content(page_html(), "text/html; charset=utf-8");
  });
}

std::string status_reason(int status) {
  switch (status) {
    case 400: return "malformed request";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 413: return "the request body is larger than the server takes (--max_upload_mb)";
    case 414: return "the request line is too long";
    case 416: return "bad Range header";
    default: return "request failed with status " + std::to_string(status);
  }
}

// Every request needs the token when one is set, but the page: it holds no data, and asks the user for it.
void add_guards(httplib::Server& s, RouteContext& c) {
  s.set_pre_routing_handler([&c](const httplib::Request& req, httplib::Response& res) {
    if (c.options.token.empty() || (req.method == "GET" && req.path == "/"))
      return httplib::Server::HandlerResponse::Unhandled;
    if (bearer_matches(req.get_header_value("Authorization"), c.options.token))
      return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    json_error(res, 401, "missing or wrong bearer token (Authorization: Bearer TOKEN)");
    return httplib::Server::HandlerResponse::Handled;
  });
  // A status without a JSON body (no route, a malformed request, a body over the limit) gets one.
  s.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404) {
      if (const std::string allow = allowed_methods(req.path); !allow.empty()) {
        res.status = 405;
        res.set_header("Allow", allow);
        json_error(res, 405,
                   req.method.substr(0, 20) + " is not a method of " + req.path.substr(0, 200) + " (" + allow + ")");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    std::string why = status_reason(res.status);
    if (res.status == 404) why = "no route " + req.method + " " + req.path.substr(0, 200);
    json_error(res, res.status, why);
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", req.method, req.path.substr(0, 200), e.what());
    } catch (...) {}
    json_error(res, 500, "internal error (the server's log has the details)");
  });
}

}  // namespace

// The methods each path takes (docs/serve_openapi.json): another method on it is answered 405 with Allow.
std::string allowed_methods(const std::string& path) {
  static const std::vector<std::pair<std::regex, std::string>> routes = {
      {std::regex("^/$"), "GET"},
      {std::regex("^/v1/(health|models|metrics|openapi\\.json)$"), "GET"},
      {std::regex("^/v1/models/.+/jobs$"), "POST"},
      {std::regex("^/v1/jobs/[0-9a-f]{32}$"), "GET, DELETE"},
      {std::regex("^/v1/jobs/[0-9a-f]{32}/(result|overlay)$"), "GET"}};
  for (const auto& [re, methods] : routes)
    if (std::regex_match(path, re)) return methods;
  return "";
}

void add_routes(httplib::Server& s, RouteContext& c) {
  add_guards(s, c);
  add_info_routes(s, c);
  add_submit_route(s, c);
  add_job_routes(s, c);
}

}  // namespace medseg::serve
