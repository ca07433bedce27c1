#pragma once
// The HTTP API of medseg_serve (docs/serve.md, docs/serve_openapi.json) on a cpp-httplib server.
#include <httplib.h>

#include <atomic>
#include <map>
#include <string>

#include "api/segmenter.h"
#include "serve/jobs.h"
#include "serve/options.h"

namespace medseg::serve {

struct RouteContext {
  const ServeOptions& options;
  JobStore& store;
  std::map<std::string, api::ModelDescription> models;  // by served name
  std::string scratch;                                  // the private scratch folder
  std::atomic<bool> stopping{false};                    // set by Service::stop: new jobs get 503
};

// Authorization, JSON errors for every failing status, and every route.
void add_routes(httplib::Server& server, RouteContext& c);

// The methods `path` takes ("GET", "GET, DELETE", ...), or "" when no route has it.
std::string allowed_methods(const std::string& path);

// Whether `format` is one of a job's result formats: auto, nifti, dicom_seg, rtstruct (medseg_predict's
// --output_format words), as POST .../jobs and GET .../result take them.
bool known_format(const std::string& format);

// {"error": "..."} with the status.
void json_error(httplib::Response& res, int status, const std::string& message);

}  // namespace medseg::serve
