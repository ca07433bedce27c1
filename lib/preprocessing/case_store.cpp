#include "preprocessing/case_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/atomic_writer.h"
#include "core/json_object_reader.h"
#include "preprocessing/npy.h"

namespace fs = std::filesystem;

namespace medseg::preprocessing {

// ---------------------------------------------------------------- properties JSON

json case_properties_to_json(const CaseProperties& p) {
  json bbox = json::array();
  for (int a = 0; a < 3; ++a) bbox.push_back({p.bbox_used_for_cropping.lo[a], p.bbox_used_for_cropping.hi[a]});
  json locs = json::object();
  for (const auto& cl : p.class_locations) {
    json l = json::array();
    for (const Location& v : cl.locations) l.push_back({v[0], v[1], v[2], v[3]});
    locs[cl.key] = std::move(l);
  }
  json j{{"format", "medseg.preprocessed_case"},
         {"version", p.version},
         {"id", p.id},
         {"original_shape", p.original_shape},
         {"original_spacing", p.original_spacing},
         {"original_geometry",
          {{"spacing", p.original_geometry.spacing},
           {"origin", p.original_geometry.origin},
           {"direction", p.original_geometry.direction},
           {"file_dimension", p.original_geometry.file_dimension}}},
         {"transpose_forward", p.transpose_forward},
         {"shape_before_cropping", p.shape_before_cropping},
         {"bbox_used_for_cropping", bbox},
         {"shape_after_cropping_and_before_resampling", p.shape_after_cropping_and_before_resampling},
         {"spacing_before_resampling", p.spacing_before_resampling},
         {"spacing_after_resampling", p.spacing_after_resampling},
         {"shape_after_resampling", p.shape_after_resampling},
         {"has_label", p.has_label},
         {"class_locations", locs}};
  if (p.reorientation) {
    json r = io::reorientation_to_json(*p.reorientation);
    r["file_geometry"] = {{"spacing", p.file_geometry.spacing},
                          {"origin", p.file_geometry.origin},
                          {"direction", p.file_geometry.direction}};
    j["reorientation"] = std::move(r);
  }
  return j;
}

namespace {

// One file's geometry as the store records it: "original_geometry", or a reorientation's "file_geometry".
void read_geometry(const JsonObjectReader& g, Geometry& out) {
  out.spacing = g.get<std::array<double, 3>>("spacing");
  out.origin = g.get<std::array<double, 3>>("origin");
  out.direction = g.get<std::array<double, 9>>("direction");
}

// The raw case as it was read: id, shape, spacing and the geometry of its file.
void read_original_case(const JsonObjectReader& r, CaseProperties& p) {
  p.id = r.get<std::string>("id");
  p.original_shape = r.get<Shape3>("original_shape");
  p.original_spacing = r.get<Spacing3>("original_spacing");
  const JsonObjectReader g = r.object("original_geometry", true);
  read_geometry(g, p.original_geometry);
  // Absent before 2D files were told apart (stores written then hold 3D files only).
  p.original_geometry.file_dimension = g.get_or<int>("file_dimension", 3);
  MEDSEG_CHECK_FILE(p.original_geometry.file_dimension == 2 || p.original_geometry.file_dimension == 3, r.source(),
                    "original_geometry.file_dimension must be 2 or 3");
}

// What preprocessing did, in the order it did it: transpose, crop, resample.
void read_preprocessing_steps(const JsonObjectReader& r, CaseProperties& p) {
  p.transpose_forward = r.get<Perm3>("transpose_forward");
  to_perm3({p.transpose_forward[0], p.transpose_forward[1], p.transpose_forward[2]}, r.source());
  p.shape_before_cropping = r.get<Shape3>("shape_before_cropping");
  const auto bbox = r.get<std::array<std::array<int64_t, 2>, 3>>("bbox_used_for_cropping");  // [lo, hi] per axis
  for (std::size_t a = 0; a < 3; ++a) {
    p.bbox_used_for_cropping.lo[a] = bbox[a][0];
    p.bbox_used_for_cropping.hi[a] = bbox[a][1];
  }
  p.shape_after_cropping_and_before_resampling = r.get<Shape3>("shape_after_cropping_and_before_resampling");
  p.spacing_before_resampling = r.get<Spacing3>("spacing_before_resampling");
  p.spacing_after_resampling = r.get<Spacing3>("spacing_after_resampling");
  p.shape_after_resampling = r.get<Shape3>("shape_after_resampling");
}

}  // namespace

CaseProperties case_properties_from_json(const json& j, const std::string& source) {
  const JsonObjectReader r(j, source, "", "properties");
  CaseProperties p;
  try {
    // Checked reads (json_as): a float such as 1e55 must not be cast into an int (undefined behaviour, found by
    // fuzzing).
    p.version = r.get<int>("version");
    MEDSEG_CHECK_FILE(p.version == kCasePropertiesVersion, source, "properties version ", p.version,
                      " is not supported (expected ", kCasePropertiesVersion, ")");
    read_original_case(r, p);
    read_preprocessing_steps(r, p);
    p.has_label = r.get<bool>("has_label");
    if (r.has("reorientation")) {  // NibabelIOWithReorient (io/reorient.h)
      const JsonObjectReader reo = r.object("reorientation", true);
      p.reorientation = io::reorientation_from_json(reo.value(), source);
      read_geometry(reo.object("file_geometry", true), p.file_geometry);
    }
    for (const auto& [key, list] : r.object("class_locations", true).value().items()) {
      ClassLocations cl{key, {}};
      for (const auto& v : list) cl.locations.push_back(v.get<Location>());
      p.class_locations.push_back(std::move(cl));
    }
  } catch (const FileError&) { throw; } catch (const std::exception& e) {
    throw FileError(source, concat("malformed properties (", e.what(), ")"));
  }
  return p;
}

// ---------------------------------------------------------------- writing

namespace {

std::string case_path(const std::string& folder, const std::string& id, const char* suffix) {
  return (fs::path(folder) / (id + suffix)).string();
}

// int8 when every value fits (the usual case), else int16.
void write_seg_npy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<int16_t>& seg,
                   bool sync) {
  const auto mm = std::minmax_element(seg.begin(), seg.end());
  if (seg.empty() || (*mm.first >= -128 && *mm.second <= 127)) {
    std::vector<int8_t> s8(seg.begin(), seg.end());
    write_npy(path, "|i1", shape, s8.data(), s8.size(), sync);
  } else {
    write_npy(path, "<i2", shape, seg.data(), seg.size() * sizeof(int16_t), sync);
  }
}

}  // namespace

void write_preprocessed_case(const std::string& folder, const CaseProperties& props, const CaseArrays& a, bool sync) {
  const int64_t n = a.shape[0] * a.shape[1] * a.shape[2];
  MEDSEG_CHECK(static_cast<int64_t>(a.data.size()) == a.channels * n && static_cast<int64_t>(a.seg.size()) == n,
               "write_preprocessed_case ", props.id, ": array sizes do not match the shape");
  const std::vector<int64_t> data_shape{a.channels, a.shape[0], a.shape[1], a.shape[2]};
  const std::vector<int64_t> seg_shape{1, a.shape[0], a.shape[1], a.shape[2]};
  write_npy(case_path(folder, props.id, ".npy"), "<f4", data_shape, a.data.data(), a.data.size() * sizeof(float), sync);
  write_seg_npy(case_path(folder, props.id, "_seg.npy"), seg_shape, a.seg, sync);
  const std::string text = case_properties_to_json(props).dump() + "\n";
  write_parts_atomic(case_path(folder, props.id, ".json"), {{text.data(), text.size()}}, sync);
}

// ---------------------------------------------------------------- reading

namespace detail {

struct NpyMapping {
  void* addr = nullptr;
  std::size_t size = 0;
  NpyHeader header;
  NpyMapping() = default;
  NpyMapping(const NpyMapping&) = delete;
  NpyMapping& operator=(const NpyMapping&) = delete;
  ~NpyMapping() {
    if (addr) ::munmap(addr, size);
  }
  const char* bytes() const { return static_cast<const char*>(addr); }
};

}  // namespace detail

namespace {

// Closes a file descriptor on every way out of the scope (the mapping outlives it).
struct CaseStoreFd {
  int fd;
  explicit CaseStoreFd(int f) : fd(f) {}
  CaseStoreFd(const CaseStoreFd&) = delete;
  CaseStoreFd& operator=(const CaseStoreFd&) = delete;
  ~CaseStoreFd() { ::close(fd); }
};

// Maps `path` read-only and checks it is a complete 4-D C-order .npy of a known dtype.
std::shared_ptr<detail::NpyMapping> map_npy(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  MEDSEG_CHECK_FILE(fd >= 0, path,
                    errno == ENOENT ? std::string("file not found") : concat("cannot open: ", std::strerror(errno)));
  const CaseStoreFd closer{fd};
  struct stat st {};
  MEDSEG_CHECK_FILE(::fstat(fd, &st) == 0, path, "cannot stat");
  const auto size = static_cast<std::size_t>(st.st_size);
  MEDSEG_CHECK_FILE(size != 0, path, "empty file");
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  MEDSEG_CHECK_FILE(addr != MAP_FAILED, path, "mmap failed: ", std::strerror(errno));
  auto m = std::make_shared<detail::NpyMapping>();
  m->addr = addr;
  m->size = size;
  m->header = parse_npy_header(m->bytes(), size, path);
  const NpyHeader& h = m->header;
  MEDSEG_CHECK_FILE(!h.fortran_order, path, "Fortran-ordered arrays are not supported");
  MEDSEG_CHECK_FILE(h.shape.size() == 4, path, "expected a 4-D array (C, Z, Y, X), got ", h.shape.size(), "-D");
  MEDSEG_CHECK_FILE(h.item_size() != 0, path, "unsupported dtype '", h.descr, "'");
  const std::size_t need = h.data_offset + static_cast<std::size_t>(h.numel()) * h.item_size();
  MEDSEG_CHECK_FILE(size >= need, path, "truncated: ", size, " bytes, the header promises ", need);
  return m;
}

SegDType seg_dtype_of(const NpyHeader& h, const std::string& path) {
  if (h.descr == "|i1" || h.descr == "<i1") return SegDType::Int8;
  if (h.descr == "<i2") return SegDType::Int16;
  throw FileError(path, concat("dtype '", h.descr, "', expected int8 '|i1' or int16 '<i2'"));
}

}  // namespace

PreprocessedCase open_preprocessed_case(const std::string& folder, const std::string& id) {
  PreprocessedCase c;
  const std::string json_path = case_path(folder, id, ".json");
  MEDSEG_CHECK_FILE(fs::exists(json_path), json_path, "file not found (case not preprocessed?)");
  c.props_ = case_properties_from_json(read_json(json_path), json_path);
  const std::string data_path = case_path(folder, id, ".npy");
  const std::string seg_path = case_path(folder, id, "_seg.npy");
  c.data_map_ = map_npy(data_path);
  c.seg_map_ = map_npy(seg_path);
  const NpyHeader& dh = c.data_map_->header;
  const NpyHeader& sh = c.seg_map_->header;
  MEDSEG_CHECK_FILE(dh.descr == "<f4", data_path, "dtype '", dh.descr, "', expected float32 '<f4'");
  c.seg_dtype_ = seg_dtype_of(sh, seg_path);
  c.channels_ = static_cast<int>(dh.shape[0]);
  c.shape_ = {dh.shape[1], dh.shape[2], dh.shape[3]};
  MEDSEG_CHECK_FILE(sh.shape[0] == 1 && (Shape3{sh.shape[1], sh.shape[2], sh.shape[3]} == c.shape_), seg_path,
                    "shape does not match ", data_path);
  MEDSEG_CHECK_FILE(c.props_.shape_after_resampling == c.shape_, json_path, "shape_after_resampling ",
                    shape_str(c.props_.shape_after_resampling), " does not match ", data_path, " ",
                    shape_str(c.shape_));
  MEDSEG_CHECK_FILE(c.props_.id == id, json_path, "id '", c.props_.id, "' does not match the file name");
  c.data_ptr_ = reinterpret_cast<const float*>(c.data_map_->bytes() + dh.data_offset);
  c.seg_ptr_ = c.seg_map_->bytes() + sh.data_offset;
  return c;
}

int PreprocessedCase::seg_at(int64_t z, int64_t y, int64_t x) const {
  const int64_t i = (z * shape_[1] + y) * shape_[2] + x;
  return seg_dtype_ == SegDType::Int8 ? static_cast<const int8_t*>(seg_ptr_)[i]
                                      : static_cast<const int16_t*>(seg_ptr_)[i];
}

std::vector<std::string> list_preprocessed_cases(const std::string& folder) {
  std::vector<std::string> ids;
  MEDSEG_CHECK_FILE(fs::is_directory(folder), folder, "folder not found");
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json") continue;
    const std::string id = name.substr(0, name.size() - 5);
    if (fs::exists(case_path(folder, id, ".npy")) && fs::exists(case_path(folder, id, "_seg.npy"))) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// ---------------------------------------------------------------- patches

namespace {

// Copies box `b` of one (Z, Y, X) array `src` into `out`, padding outside voxels.
template <class In, class Out>
void copy_box(const In* src, const Shape3& shape, const Box& b, Out* out, Out pad) {
  const Shape3 s = b.shape();
  const int64_t x0 = std::max<int64_t>(b.lo[2], 0), x1 = std::min(b.hi[2], shape[2]);
  for (int64_t z = b.lo[0]; z < b.hi[0]; ++z)
    for (int64_t y = b.lo[1]; y < b.hi[1]; ++y) {
      Out* row = out + ((z - b.lo[0]) * s[1] + (y - b.lo[1])) * s[2];
      if (z < 0 || z >= shape[0] || y < 0 || y >= shape[1] || x0 >= x1) {
        std::fill(row, row + s[2], pad);
        continue;
      }
      const In* in = src + (z * shape[1] + y) * shape[2];
      Out* o = std::fill_n(row, x0 - b.lo[2], pad);
      o = std::copy(in + x0, in + x1, o);
      std::fill(o, row + s[2], pad);
    }
}

void check_box(const Box& b) {
  for (int a = 0; a < 3; ++a) MEDSEG_CHECK(b.hi[a] >= b.lo[a], "read_patch: box has hi < lo along axis ", a);
}

}  // namespace

void read_patch(const PreprocessedCase& c, const Box& box, float* out, float pad_value) {
  check_box(box);
  const int64_t n = box.numel();
  for (int ch = 0; ch < c.num_channels(); ++ch) copy_box(c.channel(ch), c.shape(), box, out + ch * n, pad_value);
}

void read_seg_patch(const PreprocessedCase& c, const Box& box, int16_t* out, int16_t pad_value) {
  check_box(box);
  if (c.seg_dtype() == SegDType::Int8)
    copy_box(c.seg_int8(), c.shape(), box, out, pad_value);
  else
    copy_box(c.seg_int16(), c.shape(), box, out, pad_value);
}

// ---------------------------------------------------------------- stand-alone segmentations

void write_segmentation_file(const std::string& path, const Shape3& shape, const std::vector<int16_t>& seg, bool sync) {
  MEDSEG_CHECK(static_cast<int64_t>(seg.size()) == shape[0] * shape[1] * shape[2], "write_segmentation_file ", path,
               ": ", seg.size(), " values for shape ", shape_str(shape));
  write_seg_npy(path, {1, shape[0], shape[1], shape[2]}, seg, sync);
}

SegmentationFile open_segmentation_file(const std::string& path) {
  SegmentationFile f;
  f.path_ = path;
  f.map_ = map_npy(path);
  const NpyHeader& h = f.map_->header;
  f.dtype_ = seg_dtype_of(h, path);
  MEDSEG_CHECK_FILE(h.shape[0] == 1, path, "expected one channel (1, Z, Y, X), got ", h.shape[0]);
  f.shape_ = {h.shape[1], h.shape[2], h.shape[3]};
  f.ptr_ = f.map_->bytes() + h.data_offset;
  return f;
}

void read_seg_patch(const SegmentationFile& f, const Box& box, int16_t* out, int16_t pad_value) {
  check_box(box);
  if (f.dtype() == SegDType::Int8)
    copy_box(static_cast<const int8_t*>(f.ptr_), f.shape(), box, out, pad_value);
  else
    copy_box(static_cast<const int16_t*>(f.ptr_), f.shape(), box, out, pad_value);
}

}  // namespace medseg::preprocessing
