#include "checkpoint/container.h"

#include <ATen/ATen.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "core/atomic_writer.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/strings.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace medseg::checkpoint {
namespace {

constexpr int64_t kAlign = 64;          // blob and data-section alignment
constexpr int64_t kPreambleBytes = 24;  // magic(8) version(u32) reserved(u32) header_size(u64)
constexpr int64_t kTrailerBytes = 16;   // payload_size(u64) crc32(u32) "CKOK"
constexpr char kTrailerTag[4] = {'C', 'K', 'O', 'K'};
constexpr std::size_t kChunk = 16u << 20;  // crc32/IO chunk

static_assert(sizeof(uint64_t) == 8, "64-bit integers expected");

bool host_is_little_endian() {
  const uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

int64_t align_up(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

const std::map<c10::ScalarType, std::string>& dtype_names() {
  static const std::map<c10::ScalarType, std::string> m = {
      {at::kFloat, "float32"}, {at::kDouble, "float64"}, {at::kHalf, "float16"}, {at::kBFloat16, "bfloat16"},
      {at::kByte, "uint8"},    {at::kChar, "int8"},      {at::kShort, "int16"},  {at::kInt, "int32"},
      {at::kLong, "int64"},    {at::kBool, "bool"}};
  return m;
}

template <class T>
void put_le(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // host is little-endian (checked)
  out.append(b, sizeof(T));
}

template <class T>
T get_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// One distinct storage to write: all keys that point into it share this blob.
struct Blob {
  at::Tensor flat;  // 1-D view of the whole storage, in its dtype
  int64_t offset = 0, nbytes = 0;
};

// A 1-D tensor covering a tensor's whole storage (so views/aliases can be re-created by strides).
at::Tensor whole_storage(const at::Tensor& t) {
  const int64_t item = static_cast<int64_t>(t.element_size());
  const int64_t numel = static_cast<int64_t>(t.storage().nbytes()) / item;
  return at::empty({0}, t.options().requires_grad(false)).set_(t.storage(), 0, {numel}, {1});
}

// CRC-accumulating writer on top of AtomicWriter.
class CrcSink {
 public:
  explicit CrcSink(AtomicWriter& w) : w_(w) {}
  void write(const void* p, std::size_t n) {
    const auto* b = static_cast<const Bytef*>(p);
    for (std::size_t off = 0; off < n; off += kChunk) {
      const std::size_t k = std::min(kChunk, n - off);
      crc_ = crc32(crc_, b + off, static_cast<uInt>(k));
      w_.write(b + off, k);
    }
  }
  void pad_to(int64_t pos) {
    static const char zeros[kAlign] = {};
    while (static_cast<int64_t>(w_.written()) < pos)
      write(zeros, static_cast<std::size_t>(std::min<int64_t>(kAlign, pos - w_.written())));
  }
  uLong crc() const { return crc_; }

 private:
  AtomicWriter& w_;
  uLong crc_ = crc32(0L, Z_NULL, 0);
};

json describe(const NamedTensors& tensors, std::vector<Blob>& blobs) {
  std::map<std::pair<const void*, c10::ScalarType>, int64_t> blob_of;
  json entries = json::array();
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    MEDSEG_CHECK(t.defined(), "checkpoint tensor '", name, "' is undefined");
    MEDSEG_CHECK(t.layout() == at::kStrided && !t.is_quantized(), "checkpoint tensor '", name,
                 "' is not a dense strided tensor");
    const std::string dt = dtype_name(t.scalar_type());
    const auto key = std::make_pair(static_cast<const void*>(t.storage().unsafeGetStorageImpl()), t.scalar_type());
    auto it = blob_of.find(key);
    if (it == blob_of.end()) {
      Blob b;
      b.flat = whole_storage(t);
      b.nbytes = static_cast<int64_t>(t.storage().nbytes());
      b.offset = offset;
      offset = align_up(offset + b.nbytes);
      it = blob_of.emplace(key, static_cast<int64_t>(blobs.size())).first;
      blobs.push_back(std::move(b));
    }
    entries.push_back({{"name", name},
                       {"blob", it->second},
                       {"dtype", dt},
                       {"shape", t.sizes().vec()},
                       {"strides", t.strides().vec()},
                       {"storage_offset", t.storage_offset()}});
  }
  return entries;
}

}  // namespace

std::string dtype_name(c10::ScalarType t) {
  const auto& m = dtype_names();
  auto it = m.find(t);
  MEDSEG_CHECK(it != m.end(), "checkpoint: unsupported tensor dtype ", c10::toString(t));
  return it->second;
}

c10::ScalarType dtype_from_name(const std::string& name) {
  for (const auto& [t, n] : dtype_names())
    if (n == name) return t;
  throw Error("checkpoint: unknown dtype '" + name + "'");
}

AliasStats alias_stats(const NamedTensors& tensors) {
  AliasStats s;
  std::map<const void*, int64_t> seen;
  for (const auto& [name, t] : tensors) {
    (void)name;
    if (!t.defined()) continue;
    s.total_bytes += t.numel() * static_cast<int64_t>(t.element_size());
    const void* key = t.storage().unsafeGetStorageImpl();
    if (seen.emplace(key, 0).second) {
      s.unique_bytes += static_cast<int64_t>(t.storage().nbytes());
      ++s.unique_storages;
    }
  }
  return s;
}

void write_archive(const std::string& path, const TensorArchive& archive) {
  MEDSEG_CHECK(host_is_little_endian(), "checkpoint: big-endian hosts are not supported");
  std::vector<Blob> blobs;
  json header = {{"format", "medseg-checkpoint"}, {"meta", archive.meta}};
  header["tensors"] = describe(archive.tensors, blobs);
  json blob_list = json::array();
  int64_t data_bytes = 0;
  for (const auto& b : blobs) {
    blob_list.push_back({{"dtype", dtype_name(b.flat.scalar_type())}, {"offset", b.offset}, {"nbytes", b.nbytes}});
    data_bytes = b.offset + b.nbytes;
  }
  header["blobs"] = std::move(blob_list);
  header["data_bytes"] = data_bytes;
  const std::string header_text = header.dump();

  std::string pre(kCheckpointMagic, 8);
  put_le<uint32_t>(pre, kCheckpointFormatVersion);
  put_le<uint32_t>(pre, 0);
  put_le<uint64_t>(pre, header_text.size());

  AtomicWriter w(path);
  CrcSink sink(w);
  sink.write(pre.data(), pre.size());
  sink.write(header_text.data(), header_text.size());
  const int64_t data_start = align_up(kPreambleBytes + static_cast<int64_t>(header_text.size()));
  for (const auto& b : blobs) {
    sink.pad_to(data_start + b.offset);
    const at::Tensor cpu = b.flat.device().is_cpu() ? b.flat : b.flat.to(at::kCPU);
    sink.write(cpu.data_ptr(), static_cast<std::size_t>(b.nbytes));
  }
  sink.pad_to(data_start + data_bytes);
  std::string trailer;
  put_le<uint64_t>(trailer, w.written());
  put_le<uint32_t>(trailer, static_cast<uint32_t>(sink.crc()));
  trailer.append(kTrailerTag, 4);
  w.write(trailer.data(), trailer.size());
  w.commit();
}

namespace {

// Sequential reader that checks every read against the file size and accumulates the CRC.
class CrcSource {
 public:
  CrcSource(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    // A folder opens as a stream on Linux and only fails at its size: say what it is.
    MEDSEG_CHECK_FILE(!fs::is_directory(path), path, "is a folder, not a checkpoint file");
    MEDSEG_CHECK_FILE(in_, path, fs::exists(path) ? "cannot be opened" : "file not found");
    std::error_code ec;
    size_ = static_cast<int64_t>(fs::file_size(path, ec));
    MEDSEG_CHECK_FILE(!ec, path, "cannot determine file size");
  }
  void read(void* dst, int64_t n, const char* what) {
    auto* p = static_cast<char*>(dst);
    for (int64_t off = 0; off < n; off += static_cast<int64_t>(kChunk)) {
      const auto k = static_cast<std::streamsize>(std::min<int64_t>(kChunk, n - off));
      MEDSEG_CHECK_FILE(in_.read(p + off, k), path_, "truncated while reading ", what);
      crc_ = crc32(crc_, reinterpret_cast<const Bytef*>(p + off), static_cast<uInt>(k));
    }
    pos_ += n;
  }
  void skip_to(int64_t pos) {
    char scratch[kAlign];
    while (pos_ < pos) read(scratch, std::min<int64_t>(kAlign, pos - pos_), "padding");
  }
  int64_t size() const { return size_; }
  int64_t pos() const { return pos_; }
  uLong crc() const { return crc_; }
  std::ifstream& stream() { return in_; }

 private:
  std::string path_;
  std::ifstream in_;
  int64_t size_ = 0, pos_ = 0;
  uLong crc_ = crc32(0L, Z_NULL, 0);
};

struct Preamble {
  uint32_t version;
  uint64_t header_size;
};

Preamble read_preamble(const std::string& path, CrcSource& src) {
  MEDSEG_CHECK_FILE(src.size() >= kPreambleBytes + kTrailerBytes, path,
                    "not a medseg checkpoint (file too small: ", src.size(), " bytes)");
  char pre[kPreambleBytes];
  src.read(pre, kPreambleBytes, "the preamble");
  MEDSEG_CHECK_FILE(std::memcmp(pre, kCheckpointMagic, 8) == 0, path,
                    "not a medseg checkpoint (magic 'MEDSEGCK' missing)");
  Preamble p{get_le<uint32_t>(pre + 8), get_le<uint64_t>(pre + 16)};
  MEDSEG_CHECK_FILE(p.version != 0 && p.version <= kCheckpointFormatVersion, path, "checkpoint format version ",
                    p.version, " is not supported (this build reads version ", kCheckpointFormatVersion, ")");
  MEDSEG_CHECK_FILE(static_cast<int64_t>(p.header_size) <= src.size() - kPreambleBytes - kTrailerBytes, path,
                    "truncated or corrupt checkpoint (header size exceeds the file)");
  return p;
}

json parse_header(const std::string& path, CrcSource& src, uint64_t size) {
  std::string text(size, '\0');
  src.read(text.data(), static_cast<int64_t>(size), "the header");
  return parse_json_text<json>(text, path + " (checkpoint header)");
}

// One header tensor entry as a view into its blob. The entry must agree with the blob: the same
// dtype, and shape, strides and offset that stay inside it (a header that disagrees with its data
// is refused, not reinterpreted).
// Why a header entry's dtype does not fit its blob, or "" when it does.
std::string dtype_mismatch(const json& e, const at::Tensor& flat) {
  if (!e.contains("dtype") || !e.at("dtype").is_string()) return "header entry has no dtype";
  const std::string dt = e.at("dtype").get<std::string>();
  const std::string blob_dt = dtype_name(flat.scalar_type());
  if (dt == blob_dt) return "";
  const bool known =
      std::any_of(dtype_names().begin(), dtype_names().end(), [&](const auto& p) { return p.second == dt; });
  return known ? "header says dtype " + dt + " but its data blob holds " + blob_dt
               : "unknown dtype '" + dt + "' (its data blob holds " + blob_dt + ")";
}

std::pair<std::string, at::Tensor> tensor_view(const json& e, const std::vector<at::Tensor>& flats,
                                               const std::string& path) {
  const auto name = e.at("name").get<std::string>();
  const auto fail = [&](const std::string& problem) { throw FileError(path, "tensor '" + name + "': " + problem); };
  const auto blob = e.at("blob").get<int64_t>();
  if (blob < 0 || blob >= static_cast<int64_t>(flats.size()))
    fail(concat("blob index ", blob, " out of range (", flats.size(), " blobs)"));
  const at::Tensor& flat = flats[static_cast<std::size_t>(blob)];
  if (const std::string why = dtype_mismatch(e, flat); !why.empty()) fail(why);
  const auto shape = e.at("shape").get<std::vector<int64_t>>();
  const auto strides = e.at("strides").get<std::vector<int64_t>>();
  const auto off = e.at("storage_offset").get<int64_t>();
  if (shape.size() != strides.size()) fail("shape and strides differ in length");
  int64_t last = off;  // highest element index the view touches
  bool empty = false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0) fail("negative shape or stride");
    if (shape[i] == 0)
      empty = true;
    else if (strides[i] > 0 && shape[i] - 1 > (std::numeric_limits<int64_t>::max() - last) / strides[i])
      fail("shape and strides overflow");
    else
      last += (shape[i] - 1) * strides[i];
  }
  if (off < 0 || (!empty && last >= flat.numel()))
    fail(concat("shape ", json(shape).dump(), " with strides ", json(strides).dump(), " and offset ", off,
                " needs more than the ", flat.numel() * static_cast<int64_t>(flat.element_size()),
                " bytes of its data blob"));
  return {name, flat.as_strided(shape, strides, off)};
}

}  // namespace

ArchiveHeader read_archive_header(const std::string& path) {
  CrcSource src(path);
  const Preamble p = read_preamble(path, src);
  ArchiveHeader h;
  h.version = p.version;
  h.header = parse_header(path, src, p.header_size);
  h.file_size = src.size();
  return h;
}

namespace {

// The data section's blobs, in order, each checked to lie inside the section the header declares.
std::vector<at::Tensor> read_blobs(CrcSource& src, const json& header, int64_t data_start, const std::string& path) {
  std::vector<at::Tensor> flats;
  try {
    const int64_t data_bytes = header.at("data_bytes").get<int64_t>();
    // Compared without adding to data_bytes first: a value near 2^63 would overflow.
    MEDSEG_CHECK_FILE(data_bytes >= 0 && data_bytes == src.size() - kTrailerBytes - data_start, path,
                      "truncated or corrupt checkpoint (size ", src.size(), " bytes, header declares ", data_bytes,
                      " bytes of tensor data)");
    for (const auto& b : header.at("blobs")) {
      const auto dt = dtype_from_name(b.at("dtype").get<std::string>());
      const int64_t off = b.at("offset").get<int64_t>(), nbytes = b.at("nbytes").get<int64_t>();
      const int64_t item = static_cast<int64_t>(c10::elementSize(dt));
      // Blobs lie in order inside the data section; written so that no sum can overflow.
      MEDSEG_CHECK_FILE(off >= 0 && off >= src.pos() - data_start && nbytes >= 0 && off <= data_bytes &&
                            nbytes <= data_bytes - off && nbytes % item == 0,
                        path, "corrupt checkpoint header (bad blob offsets)");
      src.skip_to(data_start + off);
      at::Tensor flat = at::empty({nbytes / item}, at::TensorOptions().dtype(dt));
      src.read(flat.data_ptr(), nbytes, "tensor data");
      flats.push_back(flat);
    }
    src.skip_to(data_start + data_bytes);
  } catch (const FileError&) { throw; } catch (const std::exception& e) {
    throw FileError(path, "corrupt checkpoint header (" + one_line(e.what()) + ")");
  }
  return flats;
}

// The trailer: where the file ends and the CRC of everything before it.
void check_trailer(CrcSource& src, const std::string& path) {
  char trailer[kTrailerBytes];
  MEDSEG_CHECK_FILE(src.stream().read(trailer, kTrailerBytes), path, "truncated checkpoint (trailer missing)");
  MEDSEG_CHECK_FILE(
      std::memcmp(trailer + 12, kTrailerTag, 4) == 0 && get_le<uint64_t>(trailer) == static_cast<uint64_t>(src.pos()),
      path, "truncated or corrupt checkpoint (bad trailer)");
  MEDSEG_CHECK_FILE(get_le<uint32_t>(trailer + 8) == static_cast<uint32_t>(src.crc()), path,
                    "checksum mismatch: the checkpoint is corrupt or was modified");
}

}  // namespace

TensorArchive read_archive(const std::string& path) {
  MEDSEG_CHECK(host_is_little_endian(), "checkpoint: big-endian hosts are not supported");
  CrcSource src(path);
  const Preamble p = read_preamble(path, src);
  const json header = parse_header(path, src, p.header_size);
  const int64_t data_start = align_up(kPreambleBytes + static_cast<int64_t>(p.header_size));
  const std::vector<at::Tensor> flats = read_blobs(src, header, data_start, path);
  check_trailer(src, path);

  TensorArchive out;
  out.meta = header.value("meta", json::object());
  try {
    for (const auto& e : header.at("tensors")) out.tensors.emplace_back(tensor_view(e, flats, path));
  } catch (const FileError&) { throw; } catch (const std::exception& e) {
    throw FileError(path, "corrupt checkpoint header (" + one_line(e.what()) + ")");
  }
  return out;
}

}  // namespace medseg::checkpoint
