#include "sharing/nnssl_checkpoint.h"

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "sharing/nnunet_weights.h"
#include "sharing/torch_pickle.h"

namespace medseg::sharing {

namespace {

constexpr int kMaxDepth = 64;  // AdaptationPlan.serialize() nests 5 deep; a pickle may cycle

// A pickled plain value as JSON: dicts with string keys, lists and tuples, strings, numbers, bools, None.
nlohmann::json to_json(const PickleValue& v, const std::string& path, const std::string& where, int depth) {
  MEDSEG_CHECK_FILE(depth < kMaxDepth, path, where, " nests deeper than ", kMaxDepth, " levels");
  using K = PickleValue::Kind;
  switch (v.kind) {
    case K::None: return nullptr;
    case K::Bool: return v.b;
    case K::Int: return v.i;
    case K::Float: MEDSEG_CHECK_FILE(std::isfinite(v.f), path, where, " holds a non-finite number"); return v.f;
    case K::String: return v.s;
    case K::List:
    case K::Tuple: {
      nlohmann::json a = nlohmann::json::array();
      for (std::size_t i = 0; i < v.items.size(); ++i)
        a.push_back(to_json(*v.items[i], path, where + "[" + std::to_string(i) + "]", depth + 1));
      return a;
    }
    case K::Dict: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& [k, x] : v.dict) {
        MEDSEG_CHECK_FILE(k->kind == K::String, path, where, " has a key that is not a string");
        o[k->s] = to_json(*x, path, where + "." + k->s, depth + 1);
      }
      return o;
    }
    default: break;
  }
  throw FileError(path, where + " holds a value that is not plain data (a tensor, device or global)");
}

}  // namespace

bool is_torch_save_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) == std::string("PK\x03\x04", 4);
}

NnsslCheckpoint read_nnssl_checkpoint(const std::string& path) {
  const PickleDocument ck = read_torch_file(path);
  const PickleValue* weights = ck->get("network_weights");
  MEDSEG_CHECK_FILE(weights && weights->kind == PickleValue::Kind::Dict, path,
                    "has no 'network_weights' (not an nnssl checkpoint?)");
  const PickleValue* plan = ck->get("nnssl_adaptation_plan");
  MEDSEG_CHECK_FILE(plan && plan->kind == PickleValue::Kind::Dict, path,
                    "has no 'nnssl_adaptation_plan', so it is no nnssl checkpoint (an nnU-Net model is imported with "
                    "medseg_import_nnunet first)");
  NnsslCheckpoint out;
  int64_t dropped = 0;
  out.weights = weights_without_aliases(*weights, path, &dropped);
  out.adaptation_plan = to_json(*plan, path, "nnssl_adaptation_plan", 0);
  if (const PickleValue* c = ck->get("citations"); c && c->kind != PickleValue::Kind::None)
    out.citations = to_json(*c, path, "citations", 0);
  return out;
}

}  // namespace medseg::sharing
