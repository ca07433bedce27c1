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

namespace {

template <class T, std::size_t N>
std::array<T, N> get_array(const json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || !j.at(key).is_array() || j.at(key).size() != N)
    throw FileError(source, concat("key '", key, "' must be a list of ", N, " numbers"));
  std::array<T, N> out{};
  for (std::size_t i = 0; i < N; ++i) {
    if (!j.at(key)[i].is_number()) throw FileError(source, std::string("key '") + key + "' must hold numbers");
    out[i] = j.at(key)[i].get<T>();
  }
  return out;
}

const json& get_object(const json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || !j.at(key).is_object()) throw FileError(source, std::string("missing object '") + key + "'");
  return j.at(key);
}

}  // namespace

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

CaseProperties case_properties_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw FileError(source, "properties must be a JSON object");
  CaseProperties p;
  try {
    // json_as, not get<int>: a float such as 1e55 must not be cast into an int (undefined
    // behaviour, found by fuzzing).
    p.version = json_as<int>(j.contains("version") ? j.at("version") : json(), "key 'version'", source);
    if (p.version != kCasePropertiesVersion)
      throw FileError(source, concat("properties version ", p.version, " is not supported (expected ",
                                     kCasePropertiesVersion, ")"));
    p.id = json_get<std::string>(j, "id", source);
    p.original_shape = get_array<int64_t, 3>(j, "original_shape", source);
    p.original_spacing = get_array<double, 3>(j, "original_spacing", source);
    const json& g = get_object(j, "original_geometry", source);
    p.original_geometry.spacing = get_array<double, 3>(g, "spacing", source);
    p.original_geometry.origin = get_array<double, 3>(g, "origin", source);
    p.original_geometry.direction = get_array<double, 9>(g, "direction", source);
    // Absent before 2D files were told apart (stores written then hold 3D files only).
    p.original_geometry.file_dimension =
        g.contains("file_dimension") ? json_as<int>(g.at("file_dimension"), "key 'file_dimension'", source) : 3;
    if (p.original_geometry.file_dimension != 2 && p.original_geometry.file_dimension != 3)
      throw FileError(source, "original_geometry.file_dimension must be 2 or 3");
    p.transpose_forward = get_array<int, 3>(j, "transpose_forward", source);
    to_perm3({p.transpose_forward[0], p.transpose_forward[1], p.transpose_forward[2]}, source);
    p.shape_before_cropping = get_array<int64_t, 3>(j, "shape_before_cropping", source);
    const json& bbox = j.at("bbox_used_for_cropping");
    if (!bbox.is_array() || bbox.size() != 3)
      throw FileError(source, "bbox_used_for_cropping must be 3 [lo, hi] pairs");
    for (int a = 0; a < 3; ++a) {
      p.bbox_used_for_cropping.lo[a] = json_as<int64_t>(bbox[a].at(0), "bbox_used_for_cropping", source);
      p.bbox_used_for_cropping.hi[a] = json_as<int64_t>(bbox[a].at(1), "bbox_used_for_cropping", source);
    }
    p.shape_after_cropping_and_before_resampling =
        get_array<int64_t, 3>(j, "shape_after_cropping_and_before_resampling", source);
    p.spacing_before_resampling = get_array<double, 3>(j, "spacing_before_resampling", source);
    p.spacing_after_resampling = get_array<double, 3>(j, "spacing_after_resampling", source);
    p.shape_after_resampling = get_array<int64_t, 3>(j, "shape_after_resampling", source);
    p.has_label = json_get<bool>(j, "has_label", source);
    if (j.contains("reorientation")) {  // NibabelIOWithReorient (io/reorient.h)
      const json& r = get_object(j, "reorientation", source);
      p.reorientation = io::reorientation_from_json(r, source);
      const json& fg = get_object(r, "file_geometry", source);
      p.file_geometry.spacing = get_array<double, 3>(fg, "spacing", source);
      p.file_geometry.origin = get_array<double, 3>(fg, "origin", source);
      p.file_geometry.direction = get_array<double, 9>(fg, "direction", source);
    }
    for (const auto& [key, list] : get_object(j, "class_locations", source).items()) {
      ClassLocations cl{key, {}};
      for (const auto& v : list) cl.locations.push_back(v.get<Location>());
      p.class_locations.push_back(std::move(cl));
    }
  } catch (const FileError&) { throw; } catch (const std::exception& e) {
    throw FileError(source, std::string("malformed properties (") + e.what() + ")");
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
  if (static_cast<int64_t>(a.data.size()) != a.channels * n || static_cast<int64_t>(a.seg.size()) != n)
    throw Error("write_preprocessed_case " + props.id + ": array sizes do not match the shape");
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

// Maps `path` read-only and checks it is a complete 4-D C-order .npy of a known dtype.
std::shared_ptr<detail::NpyMapping> map_npy(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw FileError(path, errno == ENOENT ? "file not found" : std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw FileError(path, "cannot stat");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    throw FileError(path, "empty file");
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (addr == MAP_FAILED) throw FileError(path, std::string("mmap failed: ") + std::strerror(errno));
  auto m = std::make_shared<detail::NpyMapping>();
  m->addr = addr;
  m->size = size;
  m->header = parse_npy_header(m->bytes(), size, path);
  const NpyHeader& h = m->header;
  if (h.fortran_order) throw FileError(path, "Fortran-ordered arrays are not supported");
  if (h.shape.size() != 4)
    throw FileError(path, concat("expected a 4-D array (C, Z, Y, X), got ", h.shape.size(), "-D"));
  if (h.item_size() == 0) throw FileError(path, "unsupported dtype '" + h.descr + "'");
  const std::size_t need = h.data_offset + static_cast<std::size_t>(h.numel()) * h.item_size();
  if (size < need) throw FileError(path, concat("truncated: ", size, " bytes, the header promises ", need));
  return m;
}

SegDType seg_dtype_of(const NpyHeader& h, const std::string& path) {
  if (h.descr == "|i1" || h.descr == "<i1") return SegDType::Int8;
  if (h.descr == "<i2") return SegDType::Int16;
  throw FileError(path, "dtype '" + h.descr + "', expected int8 '|i1' or int16 '<i2'");
}

}  // namespace

PreprocessedCase open_preprocessed_case(const std::string& folder, const std::string& id) {
  PreprocessedCase c;
  const std::string json_path = case_path(folder, id, ".json");
  if (!fs::exists(json_path)) throw FileError(json_path, "file not found (case not preprocessed?)");
  c.props_ = case_properties_from_json(read_json(json_path), json_path);
  const std::string data_path = case_path(folder, id, ".npy");
  const std::string seg_path = case_path(folder, id, "_seg.npy");
  c.data_map_ = map_npy(data_path);
  c.seg_map_ = map_npy(seg_path);
  const NpyHeader& dh = c.data_map_->header;
  const NpyHeader& sh = c.seg_map_->header;
  if (dh.descr != "<f4") throw FileError(data_path, "dtype '" + dh.descr + "', expected float32 '<f4'");
  c.seg_dtype_ = seg_dtype_of(sh, seg_path);
  c.channels_ = static_cast<int>(dh.shape[0]);
  c.shape_ = {dh.shape[1], dh.shape[2], dh.shape[3]};
  if (sh.shape[0] != 1 || Shape3{sh.shape[1], sh.shape[2], sh.shape[3]} != c.shape_)
    throw FileError(seg_path, "shape does not match " + data_path);
  if (c.props_.shape_after_resampling != c.shape_)
    throw FileError(json_path, "shape_after_resampling " + shape_str(c.props_.shape_after_resampling) +
                                   " does not match " + data_path + " " + shape_str(c.shape_));
  if (c.props_.id != id) throw FileError(json_path, "id '" + c.props_.id + "' does not match the file name");
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
  if (!fs::is_directory(folder)) throw FileError(folder, "folder not found");
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
  if (h.shape[0] != 1) throw FileError(path, concat("expected one channel (1, Z, Y, X), got ", h.shape[0]));
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
