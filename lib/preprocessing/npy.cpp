#include "preprocessing/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/atomic_writer.h"

namespace medseg::preprocessing {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
constexpr std::size_t kAlign = 64;
constexpr int64_t kMaxElements = int64_t{1} << 56;  // times an item size <= 16, far from 2^63
constexpr std::size_t kMaxItemSize = 16;            // numpy's largest scalar (complex128)

// A tiny reader for the Python literal numpy writes: a dict of str -> str | bool | tuple of ints.
class DictParser {
 public:
  DictParser(const std::string& s, const std::string& path) : s_(s), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (skip_ws(), peek() != '}') {
      const std::string key = string_literal();
      expect(':');
      skip_ws();
      if (key == "descr") {
        h.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        h.shape = int_tuple();
        has_shape = true;
      } else {
        fail(concat("unexpected key '", key, "'"));
      }
      skip_ws();
      if (peek() == ',') ++i_;
    }
    if (!has_descr || !has_order || !has_shape) fail("header lacks descr, fortran_order or shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw FileError(path_, concat("not a valid .npy header: ", why));
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(concat("expected '", c, "'"));
    ++i_;
  }
  std::string string_literal() {
    skip_ws();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a string");
    const std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    fail("fortran_order must be True or False");
  }
  std::vector<int64_t> int_tuple() {
    expect('(');
    std::vector<int64_t> out;
    while (skip_ws(), peek() != ')') {
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("shape must be a tuple of integers");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        v = v * 10 + (peek() - '0');
        if (v > (int64_t{1} << 48)) fail("shape entry too large");
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      out.push_back(v);
      skip_ws();
      if (peek() == ',') ++i_;
    }
    ++i_;
    return out;
  }

  const std::string& s_;
  const std::string& path_;
  std::size_t i_ = 0;
};

}  // namespace

int64_t NpyHeader::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::size_t NpyHeader::item_size() const {
  if (descr.size() < 3) return 0;
  const char kind = descr[1];
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') return 0;
  try {
    const auto n = static_cast<std::size_t>(std::stoul(descr.substr(2)));
    return n <= kMaxItemSize ? n : 0;
  } catch (...) { return 0; }
}

std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape) {
  // Python's tuple repr, as numpy writes it: "(5,)", "(2, 3)", "()".
  std::string tuple = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) tuple += (i ? ", " : "") + std::to_string(shape[i]);
  tuple += shape.size() == 1 ? ",)" : ")";
  const std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + tuple + ", }";
  const std::size_t prefix = kMagicLen + 2 + 2;
  std::size_t total = prefix + dict.size() + 1;
  total = (total + kAlign - 1) / kAlign * kAlign;
  const std::size_t header_len = total - prefix;
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header_len & 0xff);
  out += static_cast<char>((header_len >> 8) & 0xff);
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out += '\n';
  return out;
}

NpyHeader parse_npy_header(const char* bytes, std::size_t size, const std::string& path) {
  MEDSEG_CHECK_FILE(size >= kMagicLen + 4 && std::memcmp(bytes, kMagic, kMagicLen) == 0, path,
                    "not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  std::size_t len = 0, prefix = 0;
  if (major == 1) {
    len = static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    MEDSEG_CHECK_FILE(size >= 12, path, "truncated .npy header");
    for (int i = 0; i < 4; ++i) len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    prefix = 12;
  } else {
    throw FileError(path, concat("unsupported .npy format version ", major, ".", minor));
  }
  MEDSEG_CHECK_FILE(size >= prefix + len, path, "truncated .npy header");
  const std::string dict(bytes + prefix, len);
  NpyHeader h = DictParser(dict, path).parse();
  // The byte count the header promises must not wrap around: (2^40)^3 voxels would come out as 0
  // and let a tiny file pass the size check of the reader.
  int64_t n = 1;
  for (int64_t s : h.shape)
    MEDSEG_CHECK_FILE(!__builtin_mul_overflow(n, s, &n) && n <= kMaxElements, path,
                      "not a valid .npy header: shape has more than 2^56 elements");
  h.data_offset = prefix + len;
  h.major = major;
  h.minor = minor;
  return h;
}

void write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data,
               std::size_t nbytes, bool sync) {
  const std::string header = npy_header(descr, shape);
  write_parts_atomic(path, {{header.data(), header.size()}, {data, nbytes}}, sync);
}

std::vector<float> read_npy_float32(const std::string& path, std::vector<int64_t>& shape) {
  std::ifstream f(path, std::ios::binary);
  MEDSEG_CHECK_FILE(f, path, "cannot open (missing file?)");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const NpyHeader h = parse_npy_header(bytes.data(), bytes.size(), path);
  MEDSEG_CHECK_FILE(h.descr == "<f4", path, "holds dtype ", h.descr, ", expected float32 ('<f4')");
  MEDSEG_CHECK_FILE(!h.fortran_order, path, "is in Fortran order; expected C order");
  MEDSEG_CHECK_FILE(h.data_offset <= bytes.size(), path, "truncated inside its header");
  const std::size_t have = bytes.size() - h.data_offset;
  const std::string truncated = concat("truncated: ", have, " data bytes for the shape its header declares");
  std::size_t count = 1;  // the header's element count, checked before it can overflow
  for (const int64_t s : h.shape) MEDSEG_CHECK_FILE(s >= 0, path, "has a negative extent in its shape");
  for (const int64_t s : h.shape) {
    if (s == 0) {
      count = 0;
      break;
    }
    MEDSEG_CHECK_FILE(count <= have / sizeof(float) / static_cast<std::size_t>(s), path, truncated);
    count *= static_cast<std::size_t>(s);
  }
  const std::size_t need = count * sizeof(float);
  std::vector<float> out(count);
  std::memcpy(out.data(), bytes.data() + h.data_offset, need);
  shape = h.shape;
  return out;
}

}  // namespace medseg::preprocessing
