#include "serve/options.h"

#include <filesystem>
#include <regex>
#include <set>

#include "core/error.h"

namespace fs = std::filesystem;

namespace medseg::serve {

std::string default_model_name(const std::string& folder) {
  fs::path p = fs::path(folder).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  const std::string last = p.filename().string();
  const std::string dataset = p.parent_path().filename().string();
  return dataset.empty() ? last : dataset + "/" + last;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

namespace {

// The models' names: URL-safe and unique. Empty when they are.
std::string check_model_names(const ServeOptions& o) {
  // A name travels in a URL path: letters, digits, '_', '-', '.', and '/' between parts.
  static const std::regex name_re("^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$");
  std::set<std::string> names;
  for (const ServedModel& m : o.models) {
    if (!std::regex_match(m.name, name_re) || m.name.find("..") != std::string::npos)
      return concat("model name '", m.name, "' (", m.folder, "): use letters, digits, '_', '-', '.' and '/'");
    if (!names.insert(m.name).second)
      return concat("two models are named '", m.name, "': name them with -m NAME=FOLDER");
  }
  return "";
}

}  // namespace

std::string check_options(const ServeOptions& o) {
  if (o.models.empty()) return "no model: pass -m MODEL_FOLDER (or -m NAME=MODEL_FOLDER)";
  if (std::string why = check_model_names(o); !why.empty()) return why;
  if (!is_loopback(o.host) && o.token.empty())
    return concat("--host ", o.host, " is not a loopback address: serving it needs --token_file (docs/serve.md)");
  if (o.port < 0 || o.port > 65535) return concat("--port ", o.port, ": not a port");
  if (o.workers < 1 || o.workers > 64) return concat("--workers ", o.workers, ": 1 to 64");
  if (o.max_queue < 1) return "--max_queue must be at least 1";
  if (o.max_upload_bytes < 1) return "--max_upload_mb must be at least 1";
  if (o.result_ttl_s < 0 || o.unfetched_ttl_s < 0) return "--result_ttl_s must be >= 0";
  if (o.max_connections < 8) return "--max_connections must be at least 8";
  return "";
}

}  // namespace medseg::serve
