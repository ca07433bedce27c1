#include "sharing/torch_save.h"

#include <ATen/ATen.h>

#include <cstring>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/zip_archive.h"
#include "sharing/pickle_opcodes.h"

namespace medseg::sharing {
namespace {

const char* storage_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "FloatStorage";
    case at::kDouble: return "DoubleStorage";
    case at::kHalf: return "HalfStorage";
    case at::kBFloat16: return "BFloat16Storage";
    case at::kLong: return "LongStorage";
    case at::kInt: return "IntStorage";
    case at::kShort: return "ShortStorage";
    case at::kChar: return "CharStorage";
    case at::kByte: return "ByteStorage";
    case at::kBool: return "BoolStorage";
    default: throw Error(std::string("torch_save: tensors of ") + c10::toString(t) + " are not written");
  }
}

// Pickle protocol 2, the opcodes of Python's pickle module (Lib/pickle.py).
class Pickler {
 public:
  std::string out{op_char(PickleOp::Proto), '\x02'};  // protocol 2
  std::vector<at::Tensor> storages;                   // by key: "0", "1", ...

  void value(const c10::IValue& v) {
    if (v.isNone()) {
      op(PickleOp::None);
    } else if (v.isBool()) {
      op(v.toBool() ? PickleOp::NewTrue : PickleOp::NewFalse);
    } else if (v.isInt()) {
      integer(v.toInt());
    } else if (v.isDouble()) {
      binfloat(v.toDouble());
    } else if (v.isString()) {
      text(v.toStringRef());
    } else if (v.isTuple()) {
      tuple(v.toTupleRef().elements());
    } else if (v.isList()) {
      op(PickleOp::EmptyList);  // then MARK items APPENDS
      const c10::List<c10::IValue> l = v.toList();
      if (l.empty()) return;
      op(PickleOp::Mark);
      for (const c10::IValue& x : l) value(x);
      op(PickleOp::Appends);
    } else if (v.isGenericDict()) {
      dict(v.toGenericDict());
    } else if (v.isTensor()) {
      tensor(v.toTensor());
    } else {
      throw Error("torch_save: a " + v.tagKind() + " is not written");
    }
  }

 private:
  void op(PickleOp o) { out += op_char(o); }
  void integer(int64_t x) {
    if (x >= 0 && x < 256) {
      op(PickleOp::BinInt1);
      out += static_cast<char>(x);
    } else if (x >= 0 && x < 65536) {
      op(PickleOp::BinInt2);
      little(static_cast<uint64_t>(x), 2);
    } else if (x >= INT32_MIN && x <= INT32_MAX) {
      op(PickleOp::BinInt);
      little(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(x))), 4);
    } else {
      op(PickleOp::Long1);  // of 8 bytes, two's complement
      out += '\x08';
      little(static_cast<uint64_t>(x), 8);
    }
  }
  void little(uint64_t x, int n) {
    for (int k = 0; k < n; ++k) out += static_cast<char>((x >> (8 * k)) & 0xff);
  }
  void binfloat(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    op(PickleOp::BinFloat);  // big-endian
    for (int k = 7; k >= 0; --k) out += static_cast<char>((bits >> (8 * k)) & 0xff);
  }
  void text(const std::string& s) {
    op(PickleOp::BinUnicode);
    little(s.size(), 4);
    out += s;
  }
  void global(const char* module, const char* name) {
    op(PickleOp::Global);
    out += module;
    out += '\n';
    out += name;
    out += '\n';
  }
  template <class Items>
  void tuple(const Items& items) {
    if (items.empty()) {
      op(PickleOp::EmptyTuple);
      return;
    }
    if (items.size() > 3) op(PickleOp::Mark);
    for (const auto& x : items) value(x);
    const PickleOp small[] = {PickleOp::Tuple1, PickleOp::Tuple2, PickleOp::Tuple3};
    op(items.size() > 3 ? PickleOp::Tuple : small[items.size() - 1]);
  }
  void dict(const c10::Dict<c10::IValue, c10::IValue>& d) {
    op(PickleOp::EmptyDict);  // then MARK key value ... SETITEMS
    if (d.empty()) return;
    op(PickleOp::Mark);
    for (const auto& kv : d) {
      MEDSEG_CHECK(kv.key().isString(), "torch_save: dict keys must be strings");
      value(kv.key());
      value(kv.value());
    }
    op(PickleOp::SetItems);
  }
  // torch.save's tensor: _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict()).
  void tensor(const at::Tensor& t) {
    MEDSEG_CHECK(t.device().is_cpu(), "torch_save: tensors must be on the CPU");
    const void* key = t.storage().unsafeGetStorageImpl();
    auto [it, fresh] = keys_.emplace(key, storages.size());
    if (fresh) {  // the whole storage as one flat tensor; the view below keeps its offset and strides
      const auto n = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
      storages.push_back(at::empty({0}, t.options()).set_(t.storage(), 0, {n}, {1}).clone());
    }
    const at::Tensor& whole = storages[it->second];
    global("torch._utils", "_rebuild_tensor_v2");
    op(PickleOp::Mark);
    op(PickleOp::Mark);  // the persistent id
    text("storage");
    global("torch", storage_type(t.scalar_type()));
    text(std::to_string(it->second));
    text("cpu");
    integer(whole.numel());
    op(PickleOp::Tuple);
    op(PickleOp::BinPersId);
    integer(t.storage_offset());
    std::vector<c10::IValue> size(t.sizes().begin(), t.sizes().end()), stride(t.strides().begin(), t.strides().end());
    tuple(size);
    tuple(stride);
    op(PickleOp::NewFalse);  // requires_grad
    global("collections", "OrderedDict");
    op(PickleOp::EmptyTuple);  // OrderedDict()
    op(PickleOp::Reduce);
    op(PickleOp::Tuple);  // the arguments
    op(PickleOp::Reduce);
  }

  std::map<const void*, size_t> keys_;
};

}  // namespace

void torch_save(const c10::IValue& value, const std::string& path) {
  Pickler p;
  p.value(value);
  p.out += op_char(PickleOp::Stop);
  ZipWriter z(path, true);
  z.add_bytes("archive/data.pkl", std::move(p.out), false);
  z.add_bytes("archive/byteorder", "little", false);
  for (size_t k = 0; k < p.storages.size(); ++k) {
    const at::Tensor& s = p.storages[k];
    z.add_bytes("archive/data/" + std::to_string(k),
                std::string(static_cast<const char*>(s.data_ptr()), s.numel() * s.element_size()), false);
  }
  z.add_bytes("archive/version", "3\n", false);
  z.commit();
}

}  // namespace medseg::sharing
