#include "core/zip_archive.h"

#include <zip.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/path_component.h"

namespace fs = std::filesystem;

namespace medseg {

namespace {

constexpr std::size_t kChunk = 1 << 20;

std::string libzip_message(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string m = zip_error_strerror(&e);
  zip_error_fini(&e);
  return m;
}

std::string entry_label(const std::string& name) { return concat("entry '", printable(name), "'"); }

uint32_t crc_update(uint32_t crc, const char* data, std::size_t n) {
  // zlib's crc32 takes uInt lengths; kChunk-sized pieces fit.
  return static_cast<uint32_t>(::crc32(crc, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(n)));
}

// An open entry, closed on every path out.
struct EntryStream {
  zip_file_t* f;
  EntryStream(zip* z, const ZipEntry& e, const std::string& zip_path) : f(zip_fopen_index(z, e.index, 0)) {
    MEDSEG_CHECK_FILE(f, zip_path, entry_label(e.name), ": cannot open: ", zip_strerror(z));
  }
  ~EntryStream() { zip_fclose(f); }
  // Bytes read into `buf` (0 at the end); libzip verifies the entry's CRC when it reaches the end.
  std::size_t read(char* buf, std::size_t n, const ZipEntry& e, const std::string& zip_path) {
    const zip_int64_t got = zip_fread(f, buf, n);
    MEDSEG_CHECK_FILE(got >= 0, zip_path, entry_label(e.name), ": cannot read (", zip_file_strerror(f),
                      "): the zip is damaged");
    return static_cast<std::size_t>(got);
  }
};

// The first name a zip holds twice ("" when none), from libzip's listing without its consistency
// check, which allows repeated names.
std::string repeated_entry_name(const std::string& path) {
  int code = 0;
  zip* z = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!z) return "";
  std::string twice;
  std::set<std::string> seen;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n && twice.empty(); ++i) {
    const char* name = zip_get_name(z, static_cast<zip_uint64_t>(i), 0);
    if (name && !seen.insert(name).second) twice = name;
  }
  zip_discard(z);
  return twice;
}

}  // namespace

std::string crc32_hex(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

Crc32Digest crc32_digest_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  MEDSEG_CHECK_FILE(f, path, "cannot read: ", std::strerror(errno));
  Crc32Digest d;
  d.crc32 = static_cast<uint32_t>(::crc32(0L, Z_NULL, 0));
  std::string buf(kChunk, '\0');
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    d.crc32 = crc_update(d.crc32, buf.data(), n);
    d.size += n;
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  MEDSEG_CHECK_FILE(!failed, path, "read error");
  return d;
}

ZipReader::ZipReader(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  const fs::file_status kind = fs::status(path_, ec);
  MEDSEG_CHECK_FILE(!fs::is_directory(kind), path_, "is a folder, not a zip file");
  MEDSEG_CHECK_FILE(fs::exists(kind), path_, "zip file not found");
  MEDSEG_CHECK_FILE(fs::is_regular_file(kind), path_, "is not a regular file, so not a zip file");
  int code = 0;
  z_ = zip_open(path_.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!z_ && code == ZIP_ER_EXISTS) {
    // libzip's consistency check found a name twice and does not say which: find it.
    const std::string twice = repeated_entry_name(path_);
    MEDSEG_CHECK_FILE(twice.empty(), path_, entry_label(twice), " appears twice");
  }
  MEDSEG_CHECK_FILE(z_, path_, "not a readable zip file (", libzip_message(code),
                    "): truncated, damaged or another format");
  const zip_int64_t n = zip_get_num_entries(z_, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z_, static_cast<zip_uint64_t>(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME) ||
        !(st.valid & ZIP_STAT_SIZE)) {
      const std::string why = zip_strerror(z_);
      zip_discard(z_);
      throw FileError(path_, concat("entry ", i, ": unreadable directory record (", why, ")"));
    }
    ZipEntry e;
    e.index = static_cast<uint64_t>(i);
    e.name = st.name;
    e.size = st.size;
    e.compressed_size = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : st.size;
    e.directory = !e.name.empty() && e.name.back() == '/';
    entries_.push_back(std::move(e));
  }
}

ZipReader::~ZipReader() {
  if (z_) zip_discard(z_);
}

std::string ZipReader::read(const ZipEntry& e, uint64_t max_bytes) const {
  MEDSEG_CHECK_FILE(e.size <= max_bytes, path_, entry_label(e.name), ": ", e.size, " bytes, more than the ", max_bytes,
                    " expected");
  EntryStream s(z_, e, path_);
  std::string out;
  std::string buf(kChunk, '\0');
  std::size_t n = 0;
  while ((n = s.read(buf.data(), buf.size(), e, path_)) > 0) {
    out.append(buf.data(), n);
    MEDSEG_CHECK_FILE(out.size() <= max_bytes, path_, entry_label(e.name), ": holds more bytes than its record says");
  }
  return out;
}

Crc32Digest ZipReader::extract(const ZipEntry& e, const std::string& target) const {
  EntryStream s(z_, e, path_);
  std::FILE* out = std::fopen(target.c_str(), "wbx");  // "x": never through an existing file or link
  MEDSEG_CHECK_FILE(out, target, "cannot create: ", std::strerror(errno));
  Crc32Digest d;
  d.crc32 = static_cast<uint32_t>(::crc32(0L, Z_NULL, 0));
  std::string buf(kChunk, '\0');
  try {
    std::size_t n = 0;
    while ((n = s.read(buf.data(), buf.size(), e, path_)) > 0) {
      MEDSEG_CHECK_FILE(d.size + n <= e.size, path_, entry_label(e.name), ": holds more bytes than its record says (",
                        e.size, "): the zip is damaged or forged");
      MEDSEG_CHECK_FILE(std::fwrite(buf.data(), 1, n, out) == n, target, "write failed: ", std::strerror(errno));
      d.crc32 = crc_update(d.crc32, buf.data(), n);
      d.size += n;
    }
  } catch (...) {
    std::fclose(out);
    throw;
  }
  MEDSEG_CHECK_FILE(std::fclose(out) == 0, target, "write failed: ", std::strerror(errno));
  return d;
}

ZipWriter::ZipWriter(std::string path, bool replace) : path_(std::move(path)) {
  int code = 0;
  z_ = zip_open(path_.c_str(), ZIP_CREATE | (replace ? ZIP_TRUNCATE : ZIP_EXCL), &code);
  MEDSEG_CHECK_FILE(z_ || code != ZIP_ER_EXISTS, path_, "already exists; pass --overwrite to replace it");
  MEDSEG_CHECK_FILE(z_, path_, "cannot create the zip file (", libzip_message(code), ")");
}

ZipWriter::~ZipWriter() {
  if (z_) zip_discard(z_);
}

void ZipWriter::add_file(const std::string& name, const std::string& source, bool compress) {
  zip_source_t* src = zip_source_file(z_, source.c_str(), 0, -1);
  MEDSEG_CHECK_FILE(src, source, "cannot add to the zip: ", zip_strerror(z_));
  const zip_int64_t idx = zip_file_add(z_, name.c_str(), src, ZIP_FL_ENC_UTF_8);
  if (idx < 0) {
    zip_source_free(src);
    throw FileError(path_, concat(entry_label(name), ": cannot add (", zip_strerror(z_), ")"));
  }
  MEDSEG_CHECK_FILE(
      zip_set_file_compression(z_, static_cast<zip_uint64_t>(idx), compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) == 0,
      path_, entry_label(name), ": cannot set the compression (", zip_strerror(z_), ")");
}

void ZipWriter::add_bytes(const std::string& name, std::string bytes, bool compress) {
  buffers_.push_back(std::make_unique<std::string>(std::move(bytes)));
  const std::string& b = *buffers_.back();
  zip_source_t* src = zip_source_buffer(z_, b.data(), b.size(), 0);
  MEDSEG_CHECK_FILE(src, path_, entry_label(name), ": cannot add (", zip_strerror(z_), ")");
  const zip_int64_t idx = zip_file_add(z_, name.c_str(), src, ZIP_FL_ENC_UTF_8);
  if (idx < 0) {
    zip_source_free(src);
    throw FileError(path_, concat(entry_label(name), ": cannot add (", zip_strerror(z_), ")"));
  }
  MEDSEG_CHECK_FILE(
      zip_set_file_compression(z_, static_cast<zip_uint64_t>(idx), compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) == 0,
      path_, entry_label(name), ": cannot set the compression (", zip_strerror(z_), ")");
}

void ZipWriter::commit() {
  MEDSEG_CHECK_FILE(zip_close(z_) == 0, path_, "cannot write the zip file: ", zip_strerror(z_));
  z_ = nullptr;
}

}  // namespace medseg
