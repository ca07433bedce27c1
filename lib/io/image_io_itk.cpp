// ITK-backed implementation of io/image_io.h. The only place (with other *_itk.cpp files) that
// includes ITK headers.
#include <itkBMPImageIO.h>
#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <itkImageIOFactory.h>
#include <itkPNGImageIO.h>
#include <itkTIFFImageIO.h>
#include <itkVectorImage.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "io/dicom_series.h"
#include "io/image_formats.h"
#include "io/image_io.h"
#include "io/itk_globals.h"
#include "io/nifti_check.h"
#include "io/natural_check.h"
#include "io/tiff_planes.h"

namespace fs = std::filesystem;

namespace medseg::io {
namespace {

// ITK exception texts are multi-line with source locations; keep the description only.
std::string itk_reason(const itk::ExceptionObject& e) {
  std::string d = e.GetDescription();
  while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
  for (auto& c : d)
    if (c == '\n') c = ' ';
  return d;
}

// Reads the file into an ITK image through the ImageIO that checked its header.
template <class ImageT>
typename ImageT::Pointer read_itk_image(const std::string& path, itk::ImageIOBase* io) {
  auto reader = itk::ImageFileReader<ImageT>::New();
  reader->SetFileName(path);
  reader->SetImageIO(io);
  {
    // The reader parses the header again; Update() below then finds its information current.
    std::lock_guard<std::mutex> lock(itk_header_mutex());
    reader->UpdateOutputInformation();
  }
  reader->Update();
  return reader->GetOutput();
}

// nnU-Net's geometry for the non-medical families (io/image_formats.h): natural 2D images have spacing
// 1 whatever the file says (PNG's pHYs, TIFF's resolution tags); 3D TIFFs take the sidecar's spacing.
// Origin 0 and identity direction for both.
void apply_family_geometry(const std::string& path, unsigned dims, Geometry& g) {
  const ImageFamily family = image_family(path);
  if (family == ImageFamily::Medical) return;
  g = Geometry{};
  if (dims == 3) {
    const std::string sidecar = tiff_sidecar_for(path);
    if (!sidecar.empty()) {
      const auto xyz = read_tiff_sidecar(sidecar);
      for (unsigned i = 0; i < 3; ++i) g.spacing[i] = xyz[i];
    }
  }
}

// The geometry of an ITK image of D <= 3 dimensions; a 2D image is one slice 999 x its spacing thick.
template <class ImageT>
Geometry geometry_of(const std::string& path, const ImageT& img) {
  constexpr unsigned D = ImageT::ImageDimension;
  Geometry g;
  for (unsigned i = 0; i < D; ++i) {
    g.spacing[i] = img.GetSpacing()[i];
    g.origin[i] = img.GetOrigin()[i];
    for (unsigned j = 0; j < D; ++j) g.direction[i * 3 + j] = img.GetDirection()(i, j);
  }
  apply_family_geometry(path, D, g);
  if (D == 2) {
    g.spacing[2] = g.slice_spacing_2d();
    g.file_dimension = 2;
  }
  return g;
}

// Reads a D-dimensional file (D = 2 or 3) into a 3D volume; a 2D image becomes one z slice.
template <class T, unsigned D>
Volume read_typed(const std::string& path, itk::ImageIOBase* io) {
  using ImageT = itk::Image<T, D>;
  typename ImageT::Pointer img = read_itk_image<ImageT>(path, io);
  const auto size = img->GetLargestPossibleRegion().GetSize();
  const Geometry g = geometry_of(path, *img);
  const int64_t nz = D == 3 ? static_cast<int64_t>(size[D - 1]) : 1;
  Volume v(PixelTypeOf<T>::value, {nz, static_cast<int64_t>(size[1]), static_cast<int64_t>(size[0])}, g);
  std::copy(img->GetBufferPointer(), img->GetBufferPointer() + v.numel(), v.data<T>());
  return v;
}

template <class T>
Volume read_typed(const std::string& path, itk::ImageIOBase* io, unsigned file_dims) {
  return file_dims == 2 ? read_typed<T, 2>(path, io) : read_typed<T, 3>(path, io);
}

// A 4D file (x, y, z, t) as one 3D volume per t, each with the 3D part of the geometry (ITK keeps the
// buffer x fastest, then y, z, t: each t is one contiguous block).
template <class T>
std::vector<Volume> read_typed_4d(const std::string& path, itk::ImageIOBase* io) {
  using ImageT = itk::Image<T, 4>;
  typename ImageT::Pointer img = read_itk_image<ImageT>(path, io);
  const auto size = img->GetLargestPossibleRegion().GetSize();
  Geometry g;
  for (unsigned i = 0; i < 3; ++i) {
    g.spacing[i] = img->GetSpacing()[i];
    g.origin[i] = img->GetOrigin()[i];
    for (unsigned j = 0; j < 3; ++j) g.direction[i * 3 + j] = img->GetDirection()(i, j);
  }
  const std::array<int64_t, 3> shape{static_cast<int64_t>(size[2]), static_cast<int64_t>(size[1]),
                                     static_cast<int64_t>(size[0])};
  std::vector<Volume> out;
  const T* src = img->GetBufferPointer();
  for (itk::SizeValueType t = 0; t < size[3]; ++t) {
    Volume v(PixelTypeOf<T>::value, shape, g);
    std::copy(src + t * v.numel(), src + (t + 1) * v.numel(), v.data<T>());
    out.push_back(std::move(v));
  }
  return out;
}

// The palette of an image ITK read as index + palette (ExpandRGBPalette off), as RGB triples; empty for
// any other image. Natural images only: PNG, BMP and TIFF keep palettes.
std::vector<std::array<double, 3>> palette_of(itk::ImageIOBase* io) {
  std::vector<std::array<double, 3>> out;
  if (!io->GetIsReadAsScalarPlusPalette()) return out;
  auto add = [&](const auto& pal) {
    for (const auto& c : pal) out.push_back({double(c[0]), double(c[1]), double(c[2])});
  };
  if (auto* png = dynamic_cast<itk::PNGImageIO*>(io))
    add(png->GetColorPalette());
  else if (auto* bmp = dynamic_cast<itk::BMPImageIO*>(io))
    add(bmp->GetColorPalette());
  else if (auto* tif = dynamic_cast<itk::TIFFImageIO*>(io))
    add(tif->GetColorPalette());
  return out;
}

// A gray palette (every entry r = g = b) makes one channel, as Pillow reads such files ("L"); a color
// palette makes three (RGB).
bool gray_palette(const std::vector<std::array<double, 3>>& pal) {
  return std::all_of(pal.begin(), pal.end(), [](const auto& c) { return c[0] == c[1] && c[1] == c[2]; });
}

// The channels of a palette image: its indices `idx` looked up in the palette, one volume per channel.
std::vector<Volume> apply_palette(const std::string& path, const Volume& idx,
                                  const std::vector<std::array<double, 3>>& pal) {
  const int channels = gray_palette(pal) ? 1 : 3;
  const bool wide =
      std::any_of(pal.begin(), pal.end(), [](const auto& c) { return c[0] > 255 || c[1] > 255 || c[2] > 255; });
  const std::vector<double> index = idx.to_double();
  std::vector<Volume> out;
  for (int c = 0; c < channels; ++c) {
    std::vector<double> values(index.size());
    for (size_t i = 0; i < index.size(); ++i) {
      const double k = index[i];
      MEDSEG_CHECK_FILE(k >= 0 && k < static_cast<double>(pal.size()), path, "palette index ", static_cast<int64_t>(k),
                        " is outside the palette of ", pal.size(), " colors");
      values[i] = pal[static_cast<size_t>(k)][static_cast<size_t>(c)];
    }
    out.push_back(
        Volume::from_values(wide ? PixelType::UInt16 : PixelType::UInt8, idx.shape(), idx.geometry(), values));
  }
  return out;
}

// An RGB(A) 2D image as one volume per color channel, in file order (nnU-Net's NaturalImage2DIO).
template <class T>
std::vector<Volume> read_color_channels(const std::string& path, itk::ImageIOBase* io) {
  using ImageT = itk::VectorImage<T, 2>;
  typename ImageT::Pointer img = read_itk_image<ImageT>(path, io);
  const auto size = img->GetLargestPossibleRegion().GetSize();
  const unsigned n = img->GetNumberOfComponentsPerPixel();
  const Geometry g = geometry_of(path, *img);
  const std::array<int64_t, 3> shape{1, static_cast<int64_t>(size[1]), static_cast<int64_t>(size[0])};
  const T* src = img->GetBufferPointer();
  std::vector<Volume> out;
  for (unsigned c = 0; c < n; ++c) {
    Volume v(PixelTypeOf<T>::value, shape, g);
    T* dst = v.data<T>();
    for (int64_t i = 0; i < v.numel(); ++i) dst[i] = src[i * n + c];
    out.push_back(std::move(v));
  }
  return out;
}

// Calls f(T{}) with the C++ type of an ITK component type; FileError naming `path` for others.
template <class F>
auto with_component_type(itk::IOComponentEnum type, const std::string& path, F&& f) {
  using IOC = itk::IOComponentEnum;
  switch (type) {
    case IOC::UCHAR: return f(uint8_t{});
    case IOC::CHAR: return f(int8_t{});
    case IOC::USHORT: return f(uint16_t{});
    case IOC::SHORT: return f(int16_t{});
    case IOC::UINT: return f(uint32_t{});
    case IOC::INT: return f(int32_t{});
    case IOC::LONG:
    case IOC::LONGLONG: return f(int64_t{});
    case IOC::FLOAT: return f(float{});
    case IOC::DOUBLE: return f(double{});
    default:
      throw FileError(path, std::string("unsupported voxel type ") + itk::ImageIOBase::GetComponentTypeAsString(type));
  }
}

// Writes a volume as a D-dimensional file; D = 2 only for a one-slice volume read from 2D.
template <class T, unsigned D>
void write_typed(const std::string& path, const Volume& v) {
  using ImageT = itk::Image<T, D>;
  auto img = ImageT::New();
  typename ImageT::SizeType size;
  for (unsigned i = 0; i < D; ++i) size[i] = static_cast<itk::SizeValueType>(v.shape()[2 - i]);
  img->SetRegions(typename ImageT::RegionType(size));
  typename ImageT::SpacingType sp;
  typename ImageT::PointType origin;
  typename ImageT::DirectionType dir;
  const Geometry& g = v.geometry();
  for (unsigned i = 0; i < D; ++i) {
    sp[i] = g.spacing[i];
    origin[i] = g.origin[i];
    for (unsigned j = 0; j < D; ++j) dir(i, j) = g.direction[i * 3 + j];
  }
  img->SetSpacing(sp);
  img->SetOrigin(origin);
  img->SetDirection(dir);
  img->Allocate();
  std::copy(v.data<T>(), v.data<T>() + v.numel(), img->GetBufferPointer());
  auto writer = itk::ImageFileWriter<ImageT>::New();
  writer->SetFileName(path);
  writer->SetInput(img);
  writer->SetUseCompression(true);
  writer->Update();
}

// A label value as it is in the file: 3000000000, 2.5, -1.
std::string label_value_str(double x) {
  std::ostringstream o;
  o << std::setprecision(std::abs(x) < 1e15 ? 15 : 6) << x;
  return o.str();
}

std::string lower_name(const std::string& path) {
  std::string s = fs::path(path).filename().string();
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The ".nii.gz"-style ending, so a temp file keeps the format ITK picks from the name.
std::string image_ending(const std::string& path) {
  const std::string n = lower_name(path);
  for (const char* e :
       {".nii.gz", ".nii", ".nrrd", ".nhdr", ".mha", ".mhd", ".gipl.gz", ".gipl", ".png", ".bmp", ".tiff", ".tif"}) {
    const std::string s(e);
    if (n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0)
      return fs::path(path).filename().string().substr(n.size() - s.size());
  }
  return "";
}

// What is wrong with the geometry a header reader reports, "" when nothing. ITK's own matrix code
// abort()s on NaN and fails late on a singular direction; NIfTI files were checked on their raw
// header already (nifti_check.h), this catches the other formats.
std::string header_geometry_problem(const itk::ImageIOBase& io, unsigned dims) {
  const char* const axis[] = {"x", "y", "z"};
  dims = std::min(dims, 3u);
  for (unsigned i = 0; i < dims; ++i) {
    const double s = io.GetSpacing(i);
    if (!std::isfinite(s) || s <= 0) {
      std::ostringstream o;
      o << "spacing " << s << " along " << axis[i];
      return o.str();
    }
    if (!std::isfinite(io.GetOrigin(i))) return std::string("origin is not finite along ") + axis[i];
  }
  double d[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (unsigned i = 0; i < dims; ++i)
    for (unsigned j = 0; j < dims; ++j) {
      d[i][j] = io.GetDirection(j)[i];
      if (!std::isfinite(d[i][j])) return "direction matrix holds NaN or Inf";
    }
  const double det = d[0][0] * (d[1][1] * d[2][2] - d[1][2] * d[2][1]) -
                     d[0][1] * (d[1][0] * d[2][2] - d[1][2] * d[2][0]) +
                     d[0][2] * (d[1][0] * d[2][1] - d[1][1] * d[2][0]);
  if (std::abs(det) < 1e-6) return "direction matrix is singular";
  return "";
}

// A TIFF's (or any natural image's) declared size, before ITK allocates it: a 2D image within
// kMaxNaturalImagePixels, a 3D TIFF stack within kMaxTiffStackVoxels. NIfTI, PNG and BMP were checked on
// their raw bytes already; a TIFF's strips may be compressed, so its header is what can be checked.
void check_natural_size(const std::string& path, const itk::ImageIOBase& io, unsigned nd) {
  int64_t n = 1;
  for (unsigned i = 0; i < std::min(nd, 3u); ++i) {
    const auto d = static_cast<int64_t>(io.GetDimensions(i));
    n = d > 0 && n > (int64_t(1) << 40) / d ? (int64_t(1) << 40) : n * d;
  }
  const int64_t limit = nd == 2 ? kMaxNaturalImagePixels : kMaxTiffStackVoxels;
  MEDSEG_CHECK_FILE(
      n <= limit, path, "declares ", n >= (int64_t(1) << 40) ? std::string("more than 2^40") : std::to_string(n),
      nd == 2 ? " pixels; medseg reads 2D images of up to " : " voxels; medseg reads TIFF stacks of up to ", limit);
}

}  // namespace

bool image_io_available() { return true; }

namespace {

// What is checked of the file before ITK sees it: it exists, is a file with bytes, and (PNG, BMP, NIfTI) is whole;
// libpng aborts on what it cannot decode.
void check_file_before_itk(const std::string& path) {
  std::error_code ec;
  MEDSEG_CHECK_FILE(fs::exists(path, ec), path, "file not found");
  MEDSEG_CHECK_FILE(!fs::is_directory(path, ec), path, "is a folder, not an image file");
  MEDSEG_CHECK_FILE(fs::file_size(path, ec) != 0, path, "empty file (0 bytes)");
  check_png_complete(path);
  check_bmp_complete(path);
  const int64_t nifti_nonfinite = check_nifti_complete(path);
  MEDSEG_CHECK_FILE(nifti_nonfinite <= 0, path, nifti_nonfinite, " voxel(s) are NaN or Inf");
}

// One component per voxel, but for nnU-Net's NaturalImage2DIO: a 2D RGB or RGBA file is 3 or 4 channels.
void check_components(const std::string& path, const itk::ImageIOBase& io, bool natural, bool volumes) {
  const unsigned nd = io.GetNumberOfDimensions();
  const unsigned comps = io.GetNumberOfComponents();
  const bool color = natural && nd == 2 && (comps == 3 || comps == 4);
  if (comps == 1 || (color && (volumes || tiff_planar_separate(path)))) return;
  const char* why = color                ? "a color image is image channels, not a label or a single channel"
                    : natural && nd == 2 ? "2D images must be grayscale, RGB or RGBA"
                                         : "medseg expects one channel per file (_0000, _0001, ...)";
  throw FileError(path, concat("has ", comps, " components per voxel; ", why));
}

// The checks every read makes before any voxel is read: the file, a NIfTI's raw header, the header
// ITK reads, one component, 2 to 4 dimensions (a 4th only when `volumes` allows more than one t),
// the geometry. Returns the ImageIO that read the header.
itk::ImageIOBase::Pointer open_checked(const std::string& path, bool volumes) {
  init_itk_globals_once();
  check_file_before_itk(path);
  itk::ImageIOBase::Pointer io =
      itk::ImageIOFactory::CreateImageIO(path.c_str(), itk::ImageIOFactory::IOFileModeEnum::ReadMode);
  MEDSEG_CHECK_FILE(io, path, "not a readable image (unknown format or corrupt header)");
  const bool natural = image_family(path) != ImageFamily::Medical;
  try {
    io->SetFileName(path);
    // Palettes are looked up here (apply_palette), so a gray palette gives one channel as Pillow reads it.
    if (natural) io->SetExpandRGBPalette(false);
    std::lock_guard<std::mutex> lock(itk_header_mutex());
    io->ReadImageInformation();
  } catch (const itk::ExceptionObject& e) { throw FileError(path, "corrupt image header: " + itk_reason(e)); }
  check_components(path, *io, natural, volumes);
  const unsigned nd = io->GetNumberOfDimensions();
  MEDSEG_CHECK_FILE(nd >= 2 && nd <= 4 && (nd != 4 || io->GetDimensions(3) == 1 || volumes), path, "has ", nd,
                    " dimensions; expected a 2D or 3D image");
  if (natural) check_natural_size(path, *io, nd);
  const std::string geometry = header_geometry_problem(*io, nd);
  MEDSEG_CHECK_FILE(geometry.empty(), path, "bad geometry in the header: ", geometry);
  return io;
}

void check_finite(const std::string& path, const Volume& v) {
  const int64_t bad = count_non_finite(v);
  MEDSEG_CHECK_FILE(bad <= 0, path, bad, " voxel(s) are NaN or Inf");
}

}  // namespace

// The voxels of a checked file as one volume per channel: one for most files; 3 or 4 for a color 2D
// image (when `volumes`), a color palette's 3, or one per t of a 4D file (when `volumes`).
std::vector<Volume> read_checked(const std::string& path, itk::ImageIOBase* io, bool volumes) {
  const unsigned nd = io->GetNumberOfDimensions();
  std::vector<Volume> out;
  if (io->GetNumberOfComponents() > 1 && tiff_planar_separate(path)) {
    // A stack of 3 or 4 slices as tifffile keeps it: the planes are z slices (nnU-Net's Tiff3DIO).
    Geometry g;
    apply_family_geometry(path, 3, g);
    out.push_back(read_tiff_planes(path, g));
    check_finite(path, out[0]);
    return out;
  }
  try {
    with_component_type(io->GetComponentType(), path, [&](auto t) {
      using T = decltype(t);
      if (io->GetNumberOfComponents() > 1)
        out = read_color_channels<T>(path, io);
      else if (nd == 4 && io->GetDimensions(3) > 1)
        out = read_typed_4d<T>(path, io);
      else
        out.push_back(read_typed<T>(path, io, std::min(nd, 3u)));
      return 0;
    });
  } catch (const itk::ExceptionObject& e) {
    throw FileError(path, "cannot read voxel data (truncated or corrupt file?): " + itk_reason(e));
  }
  const auto pal = palette_of(io);
  if (!pal.empty()) {
    out = apply_palette(path, out.at(0), pal);
    MEDSEG_CHECK_FILE(out.size() <= 1 || volumes, path,
                      "is a color palette image (3 channels); a label or a single channel must be grayscale");
  }
  for (const auto& v : out) check_finite(path, v);
  return out;
}

Volume read_image(const std::string& path) {
  if (fs::is_directory(path) || is_dicom_file(path)) return read_dicom_series(path);
  const itk::ImageIOBase::Pointer io = open_checked(path, false);
  return std::move(read_checked(path, io, false).at(0));
}

std::vector<Volume> read_image_volumes(const std::string& path) {
  if (fs::is_directory(path) || is_dicom_file(path)) return {read_dicom_series(path)};
  const itk::ImageIOBase::Pointer io = open_checked(path, true);
  return read_checked(path, io, true);
}

int image_file_channels(const std::string& path) {
  if (fs::is_directory(path) || is_dicom_file(path)) return 1;  // a DICOM series is one channel
  const itk::ImageIOBase::Pointer io = open_checked(path, true);
  if (io->GetNumberOfComponents() > 1 && !tiff_planar_separate(path))
    return static_cast<int>(io->GetNumberOfComponents());
  if (io->GetNumberOfDimensions() == 4) return static_cast<int>(io->GetDimensions(3));
  const auto pal = palette_of(io);  // what apply_palette will make of the indices, from the header
  return pal.empty() || gray_palette(pal) ? 1 : 3;
}

std::array<int64_t, 3> image_file_shape(const std::string& path) {
  const itk::ImageIOBase::Pointer io = open_checked(path, true);
  const auto dim = [&](unsigned i) {
    return i < io->GetNumberOfDimensions() ? static_cast<int64_t>(io->GetDimensions(i)) : int64_t(1);
  };
  return {dim(2), dim(1), dim(0)};
}

namespace {

// A label map's integer range, and the first few distinct values that are not integers.
struct LabelRange {
  double lo = 0, hi = 0;
  bool any = false;
  std::vector<double> non_integer;
};

LabelRange label_range(const Volume& v) {
  LabelRange r;
  visit_pixels(v, [&](const auto* p) {
    for (int64_t i = 0; i < v.numel(); ++i) {
      const double x = static_cast<double>(p[i]);
      if (x != std::floor(x)) {  // read_image refused NaN/Inf already
        if (r.non_integer.size() < 5 && std::find(r.non_integer.begin(), r.non_integer.end(), x) == r.non_integer.end())
          r.non_integer.push_back(x);
        continue;
      }
      if (!r.any || x < r.lo) r.lo = x;
      if (!r.any || x > r.hi) r.hi = x;
      r.any = true;
    }
  });
  return r;
}

}  // namespace

Volume read_label(const std::string& path) {
  Volume v = read_image(path);
  const LabelRange r = label_range(v);
  if (!r.non_integer.empty()) {
    std::string vals;
    for (double x : r.non_integer) vals += (vals.empty() ? "" : ", ") + label_value_str(x);
    throw FileError(path, "label map has non-integer value(s) " + vals + " (type " + pixel_type_name(v.pixel_type()) +
                              "); labels must be integers");
  }
  for (double x : {r.lo, r.hi})
    MEDSEG_CHECK_FILE(x >= std::numeric_limits<int32_t>::min() && x <= std::numeric_limits<int32_t>::max(), path,
                      "label map has value ", label_value_str(x),
                      ", far outside any label range (labels are the integers dataset.json declares)");
  const bool fits16 = r.lo >= -32768 && r.hi <= 32767;
  const PixelType target = fits16 ? PixelType::Int16 : PixelType::Int32;
  if (v.pixel_type() == target) return v;
  return Volume::from_values(target, v.shape(), v.geometry(), v.to_double());
}

namespace {

// What a natural image or TIFF file can hold, as nnU-Net writes segmentations there: integers as 8 bit when
// every value is below 255, else 16 bit (BMP: 8 bit only); TIFF also keeps float. A volume that does not
// fit is a FileError naming the file, not a silently wrapped picture.
Volume writable_for_family(const std::string& path, const Volume& v) {
  const ImageFamily family = image_family(path);
  if (family == ImageFamily::Medical) return v;
  if (!is_integer_type(v.pixel_type())) {
    if (family == ImageFamily::Tiff) return v;
    throw FileError(
        path, std::string("PNG and BMP hold 8- or 16-bit integers; this image is ") + pixel_type_name(v.pixel_type()));
  }
  const std::vector<double> values = v.to_double();
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const double min = values.empty() ? 0 : *lo, max = values.empty() ? 0 : *hi;
  MEDSEG_CHECK_FILE(min >= 0, path, "holds negative values (", label_value_str(min), "), which this format cannot");
  const bool bmp = ends_with(lower_name(path), ".bmp");
  MEDSEG_CHECK_FILE(max <= (bmp ? 255 : 65535), path, "value ", label_value_str(max), " does not fit the format's ",
                    (bmp ? "8" : "16"), "-bit pixels");
  const PixelType t = max < 255 ? PixelType::UInt8 : PixelType::UInt16;
  return v.pixel_type() == t ? v : Volume::from_values(t, v.shape(), v.geometry(), values);
}

}  // namespace

void write_image(const std::string& path, const Volume& input) {
  init_itk_globals_once();
  const std::string ending = image_ending(path);
  MEDSEG_CHECK_FILE(!ending.empty(), path,
                    "unknown image file ending (use .nii.gz, .nii, .nrrd, .mha, .gipl, .png, .bmp, .tif)");
  const fs::path target(path);
  const fs::path dir = target.parent_path();
  if (!dir.empty()) fs::create_directories(dir);
  std::random_device rd;
  const fs::path tmp = dir / (".tmp_" + std::to_string(rd()) + "_" + target.filename().string());
  const Volume v = writable_for_family(path, input);
  const bool two_d = v.geometry().file_dimension == 2 && v.shape()[0] == 1;
  try {
    visit_pixels(v, [&](const auto* p) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
      if (two_d)
        write_typed<T, 2>(tmp.string(), v);
      else
        write_typed<T, 3>(tmp.string(), v);
    });
  } catch (const itk::ExceptionObject& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw FileError(path, "cannot write image: " + itk_reason(e));
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw FileError(path, "cannot move the written image into place: " + ec.message());
  }
  // Tiff3DIO's spacing travels beside the stack (image_formats.h).
  if (image_family(path) == ImageFamily::Tiff && !two_d) write_tiff_sidecar(path, v.geometry().spacing);
}

}  // namespace medseg::io
