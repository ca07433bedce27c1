#include "sharing/torch_pickle.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/zip_archive.h"
#include "sharing/pickle_opcodes.h"

namespace medseg::sharing {

const PickleValue* PickleValue::get(const std::string& key) const {
  if (kind != Kind::Dict) return nullptr;
  for (const auto& [k, v] : dict)
    if (k->kind == Kind::String && k->s == key) return v;
  return nullptr;
}

PickleValue* PickleDocument::make() {
  values_.push_back(std::make_unique<PickleValue>());
  return values_.back().get();
}

namespace {

using Kind = PickleValue::Kind;

// torch.<Type>Storage -> dtype.
const std::map<std::string, at::ScalarType>& storage_types() {
  static const std::map<std::string, at::ScalarType> m = {
      {"torch.FloatStorage", at::kFloat},       {"torch.DoubleStorage", at::kDouble}, {"torch.HalfStorage", at::kHalf},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong},     {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort},       {"torch.CharStorage", at::kChar},     {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  return m;
}

bool allowed_global(const std::string& name) {
  static const std::set<std::string> ok = {"collections.OrderedDict",
                                           "torch._utils._rebuild_tensor_v2",
                                           "torch._utils._rebuild_parameter",
                                           "torch.device",
                                           "numpy.core.multiarray.scalar",
                                           "numpy._core.multiarray.scalar",
                                           "numpy.dtype",
                                           "_codecs.encode"};
  return ok.count(name) || storage_types().count(name);
}

class Machine {
 public:
  Machine(std::string path, const StorageBytes& storage, std::string bytes, PickleDocument& doc,
          const PickleLimits& limits)
      : path_(std::move(path)), storage_(storage), p_(std::move(bytes)), limits_(limits), doc_(doc) {}

  PickleRef run() {
    while (true) {
      const unsigned char code = byte();
      const auto op = static_cast<PickleOp>(code);
      if (op == PickleOp::Stop) return pop();
      if (!push_value(op) && !stack_op(op))
        fail(concat("pickle opcode 0x", hex(code), " at byte ", pos_ - 1, " is not one medseg reads"));
    }
  }

 private:
  // Opcodes that push one new value: constants, numbers, strings, memo reads, globals. False for any other.
  bool push_value(PickleOp op) {
    // #lizard forgives: one case per opcode (pickle_opcodes.h); the switch is the table
    switch (op) {
      case PickleOp::EmptyDict: push(make(Kind::Dict)); return true;
      case PickleOp::EmptyList: push(make(Kind::List)); return true;
      case PickleOp::EmptyTuple: push(make(Kind::Tuple)); return true;
      case PickleOp::None: push(make(Kind::None)); return true;
      case PickleOp::NewTrue:
      case PickleOp::NewFalse: {
        auto v = make(Kind::Bool);
        v->b = op == PickleOp::NewTrue;
        push(v);
        return true;
      }
      case PickleOp::BinInt: push(integer(static_cast<int32_t>(u32()))); return true;
      case PickleOp::BinInt1: push(integer(byte())); return true;
      case PickleOp::BinInt2: push(integer(u16())); return true;
      case PickleOp::Long1: push(long1()); return true;
      case PickleOp::BinFloat: push(binfloat()); return true;
      case PickleOp::BinUnicode: push(text(Kind::String, u32())); return true;
      case PickleOp::ShortBinUnicode: push(text(Kind::String, byte())); return true;
      case PickleOp::BinUnicode8: push(text(Kind::String, u64())); return true;
      case PickleOp::ShortBinString: push(text(Kind::String, byte())); return true;
      case PickleOp::BinString: push(text(Kind::String, u32())); return true;
      case PickleOp::ShortBinBytes: push(text(Kind::Bytes, byte())); return true;
      case PickleOp::BinBytes: push(text(Kind::Bytes, u32())); return true;
      case PickleOp::BinGet: push(memo(byte())); return true;
      case PickleOp::LongBinGet: push(memo(u32())); return true;
      case PickleOp::Global: {
        const std::string m = line();
        push(global(m + "." + line()));
        return true;
      }
      default: return false;
    }
  }

  // Framing, marks and the memo, and the opcodes that combine values already on the stack. False for any other.
  bool stack_op(PickleOp op) {
    // #lizard forgives: one case per opcode (pickle_opcodes.h); the switch is the table
    switch (op) {
      case PickleOp::Proto: byte(); return true;
      case PickleOp::Frame: take(8); return true;
      case PickleOp::Mark: marks_.push_back(stack_.size()); return true;
      case PickleOp::BinPut: put(byte()); return true;
      case PickleOp::LongBinPut: put(u32()); return true;
      case PickleOp::Memoize: put(static_cast<uint32_t>(memo_.size())); return true;
      case PickleOp::Tuple: push(sequence(Kind::Tuple)); return true;
      case PickleOp::List: push(sequence(Kind::List)); return true;
      case PickleOp::Tuple1: push(small_tuple(1)); return true;
      case PickleOp::Tuple2: push(small_tuple(2)); return true;
      case PickleOp::Tuple3: push(small_tuple(3)); return true;
      case PickleOp::Append: {
        auto x = pop();
        container(Kind::List)->items.push_back(x);
        return true;
      }
      case PickleOp::Appends: {
        auto xs = pop_mark();
        auto& l = container(Kind::List)->items;
        l.insert(l.end(), xs.begin(), xs.end());
        return true;
      }
      case PickleOp::Dict: {
        auto v = make(Kind::Dict);
        set_items(*v, pop_mark());
        push(v);
        return true;
      }
      case PickleOp::SetItem: {
        auto val = pop();
        auto key = pop();
        container(Kind::Dict)->dict.emplace_back(key, val);
        return true;
      }
      case PickleOp::SetItems: {
        auto xs = pop_mark();
        set_items(*container(Kind::Dict), xs);
        return true;
      }
      default: return call_op(op);
    }
  }

  // The opcodes that call: STACK_GLOBAL, BINPERSID, REDUCE, BUILD (each checked by what it names).
  bool call_op(PickleOp op) {
    switch (op) {
      case PickleOp::StackGlobal: {
        auto name = pop();
        auto mod = pop();
        push(global(mod->s + "." + name->s));
        return true;
      }
      case PickleOp::BinPersId: push(persistent(pop())); return true;
      case PickleOp::Reduce: {
        auto args = pop();
        auto fn = pop();
        push(reduce(*fn, *args));
        return true;
      }
      case PickleOp::Build: {
        auto state = pop();
        build(*top(), *state);
        return true;
      }
      default: return false;
    }
  }

  // TUPLE and LIST: the items above the last mark.
  PickleRef sequence(Kind kind) {
    auto v = make(kind);
    v->items = pop_mark();
    return v;
  }

  // TUPLE1..3: the top n items.
  PickleRef small_tuple(std::size_t n) {
    auto v = make(Kind::Tuple);
    v->items.resize(n);
    for (size_t k = n; k-- > 0;) v->items[k] = pop();
    return v;
  }

  [[noreturn]] void fail(const std::string& why) const { throw FileError(path_, why + "; nothing was executed"); }
  static std::string hex(unsigned v) {
    const char* d = "0123456789abcdef";
    return std::string{d[(v >> 4) & 15], d[v & 15]};
  }
  std::string take(uint64_t n) {
    if (n > p_.size() - pos_) fail("the pickle ends early (truncated file?)");
    std::string s = p_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  unsigned byte() { return static_cast<unsigned char>(take(1)[0]); }
  uint64_t little(int n) {
    const std::string s = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = v << 8 | static_cast<unsigned char>(s[k]);
    return v;
  }
  uint32_t u16() { return static_cast<uint32_t>(little(2)); }
  uint32_t u32() { return static_cast<uint32_t>(little(4)); }
  uint64_t u64() { return little(8); }
  std::string line() {
    const auto end = p_.find('\n', pos_);
    if (end == std::string::npos) fail("the pickle ends inside a global name");
    std::string s = p_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  PickleRef integer(int64_t x) {
    auto v = make(Kind::Int);
    v->i = x;
    return v;
  }
  PickleRef long1() {
    const unsigned n = byte();
    if (n > 8) fail(concat("an integer of ", n, " bytes"));
    const std::string s = take(n);
    int64_t x = 0;
    for (int k = static_cast<int>(n) - 1; k >= 0; --k)
      x = static_cast<int64_t>(static_cast<uint64_t>(x) << 8 | static_cast<unsigned char>(s[k]));
    if (n > 0 && n < 8 && (static_cast<unsigned char>(s[n - 1]) & 0x80)) x -= int64_t(1) << (8 * n);  // sign
    return integer(x);
  }
  PickleRef binfloat() {
    const std::string s = take(8);  // big-endian IEEE double
    uint64_t bits = 0;
    for (unsigned char c : s) bits = bits << 8 | c;
    double d;
    std::memcpy(&d, &bits, 8);
    auto v = make(Kind::Float);
    v->f = d;
    return v;
  }
  PickleRef text(Kind k, uint64_t n) {
    auto v = make(k);
    v->s = take(n);
    return v;
  }
  void push(PickleRef v) {
    slot();
    stack_.push_back(v);
  }
  void put(uint32_t key) {
    slot();
    memo_[key] = top();
  }
  // Every push and memo entry fills a slot; values move from the stack into containers, so containers,
  // stack and memo together never hold more than max_slots references.
  void slot() {
    if (++slots_ > limits_.max_slots)
      fail(concat("the pickle fills more than ", limits_.max_slots, " stack, container and memo slots (a checkpoint ",
                  "needs far fewer)"));
  }
  PickleRef pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("the pickle pops an empty stack");
    auto v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PickleRef& top() {
    if (stack_.empty()) fail("the pickle reads an empty stack");
    return stack_.back();
  }
  std::vector<PickleRef> pop_mark() {
    if (marks_.empty()) fail("the pickle closes a mark it never opened");
    std::vector<PickleRef> xs(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return xs;
  }
  PickleRef memo(uint32_t k) {
    auto it = memo_.find(k);
    if (it == memo_.end()) fail(concat("the pickle reads memo ", k, ", which it never stored"));
    return it->second;
  }
  PickleValue* container(Kind k) {
    PickleValue* c = top();
    if (c->kind != k)
      fail(k == Kind::Dict ? "the pickle sets an item of something that is no dict"
                           : "the pickle appends to something that is no list");
    return c;
  }
  void set_items(PickleValue& d, const std::vector<PickleRef>& xs) {
    if (d.kind != Kind::Dict || xs.size() % 2) fail("the pickle's SETITEMS is malformed");
    for (size_t k = 0; k < xs.size(); k += 2) d.dict.emplace_back(xs[k], xs[k + 1]);
  }
  PickleRef global(const std::string& name) {
    if (!allowed_global(name))
      fail("the pickle names the global '" + name +
           "', which is neither a tensor nor plain data; medseg reads no such file");
    auto v = make(Kind::Global);
    v->s = name;
    return v;
  }
  // ('storage', torch.<Type>Storage, key, location, numel): the archive's data/<key>, read once per key.
  PickleRef persistent(const PickleRef& pid) {
    const auto& t = pid->items;
    if (pid->kind != Kind::Tuple || t.size() < 5 || t[0]->s != "storage" || t[1]->kind != Kind::Global ||
        t[2]->kind != Kind::String || t[4]->kind != Kind::Int)
      fail("a persistent id that is not a torch storage");
    const auto type = storage_types().find(t[1]->s);
    if (type == storage_types().end()) fail("storage type '" + t[1]->s + "'");
    auto& cached = storages_[t[2]->s];
    if (!cached) {
      const int64_t numel = t[4]->i;
      const auto item = static_cast<int64_t>(at::elementSize(type->second));
      if (numel < 0 || numel > (int64_t(1) << 40) / item)
        fail(concat("storage '", t[2]->s, "' claims ", numel, " elements"));
      storage_bytes_ += static_cast<uint64_t>(numel * item);
      if (storage_bytes_ > limits_.max_storage_bytes)
        fail(concat("storage '", t[2]->s, "' brings the storages to ", storage_bytes_, " bytes, more than the ",
                    limits_.max_storage_bytes,
                    " this file can hold (a storage inflated from a few compressed bytes?)"));
      const std::string data = storage_(t[2]->s, static_cast<uint64_t>(numel * item));
      if (data.size() != static_cast<size_t>(numel * item))
        fail(concat("storage '", t[2]->s, "' holds ", data.size(), " bytes, not ", numel * item));
      cached = make(Kind::Storage);
      cached->tensor = at::empty({numel}, at::TensorOptions().dtype(type->second));
      if (!data.empty()) std::memcpy(cached->tensor.data_ptr(), data.data(), data.size());
    }
    return cached;
  }
  static std::vector<int64_t> ints(const PickleValue& t) {
    std::vector<int64_t> v;
    for (const auto& x : t.items) v.push_back(x->i);
    return v;
  }
  PickleRef reduce(const PickleValue& fn, const PickleValue& args) {
    // #lizard forgives: the allow-list of callables, each with the argument kinds it must see
    if (fn.kind != Kind::Global || args.kind != Kind::Tuple)
      fail("the pickle calls something that is no accepted global");
    const auto& a = args.items;
    if (fn.s == "collections.OrderedDict") return make(Kind::Dict);
    if (fn.s == "torch._utils._rebuild_tensor_v2" && a.size() >= 4 && a[0]->kind == Kind::Storage &&
        a[1]->kind == Kind::Int && a[2]->kind == Kind::Tuple && a[3]->kind == Kind::Tuple) {
      auto v = make(Kind::Tensor);
      v->tensor = view(a[0]->tensor, a[1]->i, ints(*a[2]), ints(*a[3]));
      return v;
    }
    if (fn.s == "torch._utils._rebuild_parameter" && !a.empty() && a[0]->kind == Kind::Tensor) return a[0];
    if (fn.s == "torch.device" && !a.empty()) {
      auto v = make(Kind::Device);
      v->s = a[0]->s;
      return v;
    }
    if (fn.s == "numpy.dtype" && !a.empty()) {
      auto v = make(Kind::Dtype);
      v->s = a[0]->s;
      return v;
    }
    if (fn.s == "_codecs.encode" && a.size() == 2 && a[0]->kind == Kind::String) return latin1(a[0]->s);
    if ((fn.s == "numpy.core.multiarray.scalar" || fn.s == "numpy._core.multiarray.scalar") && a.size() == 2 &&
        a[0]->kind == Kind::Dtype)
      return numpy_scalar(a[0]->s, a[1]->s);
    fail("the pickle calls '" + fn.s + "' with arguments medseg does not read");
  }
  // A tensor's view of its storage, checked to lie inside it (a hostile file could point anywhere).
  at::Tensor view(const at::Tensor& storage, int64_t offset, const std::vector<int64_t>& size,
                  const std::vector<int64_t>& stride) {
    if (size.size() != stride.size() || offset < 0)
      fail("a tensor whose sizes, strides and offset do not fit together");
    int64_t last = offset, numel = 1;
    bool empty = false;
    for (size_t k = 0; k < size.size(); ++k) {
      if (size[k] < 0 || stride[k] < 0 || size[k] > (int64_t(1) << 40) || stride[k] > (int64_t(1) << 40))
        fail("a tensor of size or stride outside what a file holds");
      empty = empty || size[k] == 0;
      last += (size[k] - 1) * stride[k];
      numel = size[k] > 0 && numel > storage.numel() / size[k] ? storage.numel() + 1 : numel * size[k];
    }
    if (!empty && last >= storage.numel())
      fail(concat("a tensor view reaches element ", last, " of a storage of ", storage.numel()));
    // A view presenting more elements than its storage holds repeats them (stride 0): torch.save writes
    // parameters densely, and a copy of such a view could ask for terabytes.
    if (!empty && numel > storage.numel())
      fail(concat("a tensor view presents more elements than its storage of ", storage.numel(), " holds"));
    return storage.as_strided(size, stride, offset);
  }

  void build(PickleValue& target, const PickleValue& state) {
    if (target.kind == Kind::Dtype) return;  // the byte order and flags of a numpy dtype: little-endian assumed
    if (target.kind == Kind::Dict && state.kind == Kind::Dict) return;  // an OrderedDict's empty __dict__
    fail("the pickle sets the state of an object medseg does not read");
  }
  // Protocol 2 keeps bytes as a str of code points < 256 encoded with latin1: back to the bytes.
  PickleRef latin1(const std::string& utf8) {
    auto v = make(Kind::Bytes);
    for (size_t k = 0; k < utf8.size(); ++k) {
      const unsigned char c = static_cast<unsigned char>(utf8[k]);
      if (c < 0x80)
        v->s += static_cast<char>(c);
      else if ((c & 0xe0) == 0xc0 && k + 1 < utf8.size())
        v->s += static_cast<char>(((c & 0x1f) << 6) | (utf8[++k] & 0x3f));
      else
        fail("bytes outside latin1 in the pickle");
    }
    return v;
  }
  PickleRef numpy_scalar(const std::string& dtype, const std::string& b) {
    auto read = [&](auto x) {
      if (b.size() != sizeof(x)) fail(concat("a numpy ", dtype, " scalar of ", b.size(), " bytes"));
      std::memcpy(&x, b.data(), sizeof(x));
      return x;
    };
    auto v = make(Kind::Float);
    if (dtype == "f8")
      v->f = read(double{});
    else if (dtype == "f4")
      v->f = read(float{});
    else if (dtype == "i8") {
      v->kind = Kind::Int;
      v->i = read(int64_t{});
    } else if (dtype == "i4") {
      v->kind = Kind::Int;
      v->i = read(int32_t{});
    } else if (dtype == "b1") {
      v->kind = Kind::Bool;
      v->b = read(uint8_t{}) != 0;
    } else
      fail("a numpy scalar of dtype '" + dtype + "'");
    return v;
  }

  std::string path_;
  const StorageBytes& storage_;
  std::string p_;
  PickleLimits limits_;
  int64_t values_ = 0, slots_ = 0;
  uint64_t storage_bytes_ = 0;
  size_t pos_ = 0;
  std::vector<PickleRef> stack_;
  std::vector<size_t> marks_;
  std::map<uint32_t, PickleRef> memo_;
  std::map<std::string, PickleRef> storages_;
  PickleDocument& doc_;

  PickleRef make(Kind k) {
    if (++values_ > limits_.max_values)
      fail(concat("the pickle makes more than ", limits_.max_values, " values (a checkpoint makes far fewer)"));
    PickleRef v = doc_.make();
    v->kind = k;
    return v;
  }
};

}  // namespace

PickleDocument decode_pickle(const std::string& pickle, const std::string& source, const StorageBytes& storage,
                             const PickleLimits& limits) {
  PickleDocument doc;
  doc.set_root(Machine(source, storage, pickle, doc, limits).run());
  return doc;
}

PickleDocument read_torch_file(const std::string& path, const PickleLimits& limits) {
  const ZipReader zip(path);
  std::map<std::string, const ZipEntry*> by_name;
  uint64_t file_bytes = 0;
  for (const ZipEntry& e : zip.entries()) {
    by_name.emplace(e.name, &e);
    file_bytes += e.compressed_size;
  }
  PickleLimits bounded = limits;
  bounded.max_storage_bytes = std::min(limits.max_storage_bytes, 2 * file_bytes + (uint64_t(1) << 20));
  for (const ZipEntry& e : zip.entries()) {
    const std::string tail = "/data.pkl";
    if (e.name.size() <= tail.size() || e.name.compare(e.name.size() - tail.size(), tail.size(), tail) != 0) continue;
    if (e.name.find('/') != e.name.size() - tail.size()) continue;  // <name>/data.pkl at the archive's top
    const std::string prefix = e.name.substr(0, e.name.size() - std::string("data.pkl").size());
    const StorageBytes from_zip = [&](const std::string& key, uint64_t bytes) {
      const std::string entry = prefix + "data/" + key;
      const auto s = by_name.find(entry);
      MEDSEG_CHECK_FILE(s != by_name.end(), path, "the archive has no ", entry, "; nothing was executed");
      MEDSEG_CHECK_FILE(s->second->size == bytes, path, "storage ", entry, " holds ", s->second->size, " bytes, not ",
                        bytes, "; nothing was executed");
      return zip.read(*s->second, bytes);
    };
    MEDSEG_CHECK_FILE(e.size <= kMaxPickleBytes, path, e.name, " is ", e.size, " bytes; medseg reads pickles of up to ",
                      kMaxPickleBytes, " (a checkpoint's is far smaller); nothing was executed");
    return decode_pickle(zip.read(e, kMaxPickleBytes), path, from_zip, bounded);
  }
  throw FileError(path, "not a torch.save archive (no <name>/data.pkl); files from torch older than 1.6 are not read");
}

}  // namespace medseg::sharing
