#pragma once
// POST /v1/models/{name}/jobs: checks, in this order and before the body is read, the model, the output
// format, the body's declared size and the queue; then writes the upload to the job's private folder, checks
// its channels and files, and queues the job (202). Every refusal is one JSON line and leaves nothing behind.
#include <httplib.h>

#include "serve/routes.h"

namespace medseg::serve {

void add_submit_route(httplib::Server& server, RouteContext& c);

}  // namespace medseg::serve
