#pragma once
// Files compiled into medseg_serve (lib/serve/stage.cmake makes assets.cpp from them at configure time).
#include <string>

namespace medseg::serve {

const std::string& openapi_document();  // docs/serve_openapi.json
const std::string& page_html();         // lib/serve/page.html

}  // namespace medseg::serve
