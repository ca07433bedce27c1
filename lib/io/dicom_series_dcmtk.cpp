// io/dicom_series.h on DCMTK: it parses the files and decodes compressed pixel data (JPEG, JPEG-LS, RLE);
// medseg groups files into series, checks them (io/dicom_geometry.h) and applies the pixel module
// (stored bits, MONOCHROME1, Rescale Slope/Intercept). DCMTK rather than GDCM: Debian's GDCM is built
// with assertions, and a DICOM header cut short aborts the process inside it (docs/dicom.md).
#include <dcmtk/dcmdata/dcrledrg.h>
#include <dcmtk/dcmdata/dctk.h>
#include <dcmtk/dcmjpeg/djdecode.h>
#include <dcmtk/dcmjpls/djdecode.h>
#include <dcmtk/oflog/oflog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/strings.h"
#include "io/dicom_geometry.h"
#include "io/dicom_series.h"

namespace fs = std::filesystem;

namespace medseg::io {

namespace {

// The decoders of the compressed transfer syntaxes, registered once; DCMTK's logger, which would print
// its warnings to stderr beside medseg's one-line errors, is quietened at the same time.
void init_dcmtk_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    OFLog::configure(OFLogger::FATAL_LOG_LEVEL);
    DJDecoderRegistration::registerCodecs();
    DJLSDecoderRegistration::registerCodecs();
    DcmRLEDecoderRegistration::registerCodecs();
  });
}

// A value as text, DICOM's padding trimmed; "" when absent.
std::string text(DcmItem* item, const DcmTagKey& key) {
  OFString s;
  if (item == nullptr || item->findAndGetOFStringArray(key, s).bad()) return "";
  std::string v(s.c_str());
  const auto pad = [](char c) { return c == ' ' || c == '\0'; };
  while (!v.empty() && pad(v.back())) v.pop_back();
  std::size_t b = 0;
  while (b < v.size() && pad(v[b])) ++b;
  return v.substr(b);
}

std::vector<double> numbers(const std::string& file, const char* what, const std::string& s) {
  std::vector<double> v;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = std::min(s.find('\\', start), s.size());
    const std::string part = s.substr(start, end - start);
    char* stop = nullptr;
    const double x = std::strtod(part.c_str(), &stop);
    MEDSEG_CHECK_FILE(!part.empty() && stop != part.c_str() &&
                          std::string(stop).find_first_not_of(' ') == std::string::npos && std::isfinite(x),
                      file, what, " is not a list of numbers: '", s, "'");
    v.push_back(x);
    start = end + 1;
  }
  return v;
}

// A tag of frame `frame` of an enhanced multi-frame object: in that frame's item of the Per-frame
// Functional Groups Sequence, else in the Shared one, inside the functional group `group`.
std::string functional(DcmDataset* ds, unsigned long frame, const DcmTagKey& group, const DcmTagKey& key) {
  DcmItem *fg = nullptr, *item = nullptr;
  if (ds->findAndGetSequenceItem(DCM_PerFrameFunctionalGroupsSequence, fg, static_cast<signed long>(frame)).good() &&
      fg->findAndGetSequenceItem(group, item, 0).good()) {
    const std::string v = text(item, key);
    if (!v.empty()) return v;
  }
  if (ds->findAndGetSequenceItem(DCM_SharedFunctionalGroupsSequence, fg, 0).good() &&
      fg->findAndGetSequenceItem(group, item, 0).good())
    return text(item, key);
  return "";
}

// What is read of each file before its pixels.
struct Header {
  std::string file, sop_class, sop_instance, modality, series_uid, description, transfer_syntax, photometric;
  bool has_pixels = false, is_signed = false;
  long rows = 0, columns = 0, frames = 1, samples = 1, bits_allocated = 0, bits_stored = 0, high_bit = 0;
  std::vector<std::string> positions;      // per frame
  std::vector<double> slopes, intercepts;  // per frame
  std::string orientation, pixel_spacing;
  double thickness = 0;
};

long integer(DcmItem* ds, const DcmTagKey& key, const Header& h, const char* what, long fallback) {
  const std::string s = text(ds, key);
  if (s.empty()) return fallback;
  const std::vector<double> v = numbers(h.file, what, s);
  MEDSEG_CHECK_FILE(v.size() == 1 && v[0] >= 0 && v[0] <= 1e9 && v[0] == std::floor(v[0]), h.file, what,
                    " must be one non-negative integer, got '", s, "'");
  return static_cast<long>(v[0]);
}

// Per-frame position and rescale: classic objects keep them at the top level, enhanced ones in
// functional groups.
void read_frames(DcmDataset* ds, Header& h) {
  const bool enhanced =
      ds->tagExists(DCM_SharedFunctionalGroupsSequence) || ds->tagExists(DCM_PerFrameFunctionalGroupsSequence);
  auto number = [&](const std::string& s, const char* what, double fallback) {
    return s.empty() ? fallback : numbers(h.file, what, s).at(0);
  };
  for (long f = 0; f < h.frames; ++f) {
    auto at = [&](const DcmTagKey& group, const DcmTagKey& key) {
      const std::string v = enhanced ? functional(ds, static_cast<unsigned long>(f), group, key) : "";
      return v.empty() ? text(ds, key) : v;
    };
    h.positions.push_back(at(DCM_PlanePositionSequence, DCM_ImagePositionPatient));
    h.slopes.push_back(number(at(DCM_PixelValueTransformationSequence, DCM_RescaleSlope), "Rescale Slope", 1));
    h.intercepts.push_back(
        number(at(DCM_PixelValueTransformationSequence, DCM_RescaleIntercept), "Rescale Intercept", 0));
    if (f == 0) {
      h.orientation = at(DCM_PlaneOrientationSequence, DCM_ImageOrientationPatient);
      h.pixel_spacing = at(DCM_PixelMeasuresSequence, DCM_PixelSpacing);
      h.thickness = number(at(DCM_PixelMeasuresSequence, DCM_SliceThickness), "Slice Thickness", 0);
    }
  }
}

Header read_header(const std::string& file) {
  DcmFileFormat ff;
  const OFCondition ok =
      ff.loadFileUntilTag(file.c_str(), EXS_Unknown, EGL_noChange, DCM_MaxReadLength, ERM_autoDetect, DCM_PixelData);
  MEDSEG_CHECK_FILE(!ok.bad(), file, "not a readable DICOM file (", ok.text(), ")");
  DcmDataset* ds = ff.getDataset();
  Header h;
  h.file = file;
  h.transfer_syntax = DcmXfer(ds->getOriginalXfer()).getXferName();
  h.sop_class = text(ds, DCM_SOPClassUID);
  h.sop_instance = text(ds, DCM_SOPInstanceUID);
  h.modality = text(ds, DCM_Modality);
  h.series_uid = text(ds, DCM_SeriesInstanceUID);
  h.description = text(ds, DCM_SeriesDescription);
  h.has_pixels = ds->tagExists(DCM_Rows) && ds->tagExists(DCM_Columns);
  if (!h.has_pixels) return h;
  h.rows = integer(ds, DCM_Rows, h, "Rows", 0);
  h.columns = integer(ds, DCM_Columns, h, "Columns", 0);
  h.frames = std::max(1L, integer(ds, DCM_NumberOfFrames, h, "Number of Frames", 1));
  h.samples = integer(ds, DCM_SamplesPerPixel, h, "Samples per Pixel", 1);
  h.bits_allocated = integer(ds, DCM_BitsAllocated, h, "Bits Allocated", 0);
  h.bits_stored = integer(ds, DCM_BitsStored, h, "Bits Stored", h.bits_allocated);
  h.high_bit = integer(ds, DCM_HighBit, h, "High Bit", h.bits_stored - 1);
  h.is_signed = integer(ds, DCM_PixelRepresentation, h, "Pixel Representation", 0) == 1;
  h.photometric = text(ds, DCM_PhotometricInterpretation);
  MEDSEG_CHECK_FILE(h.frames <= (int64_t(1) << 20), file, "Number of Frames ", h.frames, " is not plausible");
  read_frames(ds, h);
  return h;
}

// Storage classes that carry no image to segment, even where they have pixel data (a SEG).
std::string non_image_kind(const Header& h) {
  static const std::map<std::string, std::string> kinds = {
      {UID_SegmentationStorage, "a Segmentation (SEG)"},
      {UID_RTStructureSetStorage, "an RT Structure Set"},
      {UID_GrayscaleSoftcopyPresentationStateStorage, "a Presentation State (PR)"},
      {UID_BasicTextSRStorage, "a Structured Report (SR)"},
      {UID_EnhancedSRStorage, "a Structured Report (SR)"},
      {UID_ComprehensiveSRStorage, "a Structured Report (SR)"},
      {UID_KeyObjectSelectionDocumentStorage, "a Key Object Selection (KO)"},
      {UID_MediaStorageDirectoryStorage, "a DICOMDIR"},
  };
  const auto it = kinds.find(h.sop_class);
  if (it != kinds.end()) return it->second;
  if (h.modality == "SEG") return "a Segmentation (SEG)";
  if (!h.has_pixels) return concat("not an image (SOP class ", h.sop_class.empty() ? "missing" : h.sop_class, ")");
  return "";
}

bool named_dcm(const std::string& name) {
  return name.size() > 4 && (ends_with(name, ".dcm") || ends_with(name, ".DCM"));
}

// The DICOM files directly in `folder` (hidden entries skipped), sorted by name. A file named .dcm that is
// not DICOM is refused: it was meant to be part of the series.
std::vector<std::string> dicom_files(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || !e.is_regular_file()) continue;
    if (is_dicom_file(e.path().string()))
      files.push_back(e.path().string());
    else if (named_dcm(name))
      throw FileError(e.path().string(), "named .dcm but not a DICOM file (no DICM preamble)");
  }
  std::sort(files.begin(), files.end());
  MEDSEG_CHECK_FILE(!files.empty(), folder, "no DICOM files here (recognised by the DICM preamble)");
  return files;
}

using SeriesMap = std::map<std::string, std::vector<Header>>;

// The image headers of `path` (a folder, or one file) grouped by Series Instance UID.
SeriesMap image_series(const std::string& path) {
  init_dcmtk_once();
  MEDSEG_CHECK_FILE(fs::is_directory(path) || is_dicom_file(path), path,
                    fs::exists(path) ? "not a DICOM file (no DICM preamble)" : "not found");
  const std::vector<std::string> files = fs::is_directory(path) ? dicom_files(path) : std::vector<std::string>{path};
  SeriesMap series;
  std::string non_image;
  for (const std::string& f : files) {
    Header h = read_header(f);
    const std::string kind = non_image_kind(h);
    if (!kind.empty()) {
      if (non_image.empty()) non_image = f + " is " + kind;
      continue;
    }
    series[h.series_uid].push_back(std::move(h));
  }
  MEDSEG_CHECK_FILE(!series.empty(), path, "holds no DICOM images, only non-image objects (", non_image, ")");
  return series;
}

std::string list_series(const SeriesMap& series) {
  std::string s;
  for (const auto& [uid, hs] : series)
    s += concat(s.empty() ? "" : "; ", uid.empty() ? "(no UID)" : uid, " '", hs[0].description, "' (", hs[0].modality,
                ", ", hs.size(), " file(s))");
  return s;
}

const std::vector<Header>& pick_series(const std::string& path, const SeriesMap& s, const std::string& uid) {
  if (!uid.empty()) {
    const auto it = s.find(uid);
    MEDSEG_CHECK_FILE(it != s.end(), path, "no series with UID ", uid, " here; found: ", list_series(s));
    return it->second;
  }
  MEDSEG_CHECK_FILE(s.size() <= 1, path, "holds ", s.size(),
                    " series; keep one per case folder or pick one with --series_uid: ", list_series(s));
  return s.begin()->second;
}

template <std::size_t N>
std::array<double, N> fixed(const std::string& file, const std::string& value, const char* what) {
  MEDSEG_CHECK_FILE(!value.empty(), file, "no ", what, ": the slices cannot be placed in space");
  const std::vector<double> v = numbers(file, what, value);
  MEDSEG_CHECK_FILE(v.size() == N, file, what, " must hold ", N, " numbers, got ", v.size());
  std::array<double, N> a{};
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

// Every file shares the first one's pixel format, size, orientation and pixel spacing; a multi-frame
// object is a series of its own.
void check_alike(const std::string& path, const std::vector<Header>& hs) {
  const Header& a = hs[0];
  for (const Header& b : hs) {
    MEDSEG_CHECK_FILE(b.frames <= 1 || hs.size() <= 1, b.file, "a multi-frame object (", b.frames,
                      " frames) in a series of several files; give it a folder of its own");
    MEDSEG_CHECK_FILE(b.samples == 1 && (b.bits_allocated == 8 || b.bits_allocated == 16) && b.bits_stored >= 1 &&
                          b.bits_stored <= b.bits_allocated && b.high_bit == b.bits_stored - 1,
                      b.file, "pixel format not supported: ", b.samples, " sample(s) per pixel (", b.photometric, "), ",
                      b.bits_allocated, " bits allocated, ", b.bits_stored, " stored, high bit ", b.high_bit,
                      " (grayscale, 8 or 16 bits allocated)");
    MEDSEG_CHECK_FILE(b.rows == a.rows && b.columns == a.columns, path, "slices of different sizes: ", a.file, " is ",
                      a.rows, "x", a.columns, ", ", b.file, " is ", b.rows, "x", b.columns);
    MEDSEG_CHECK_FILE(b.bits_allocated == a.bits_allocated && b.is_signed == a.is_signed, path,
                      "slices of different pixel formats: ", a.file, ", ", b.file);
    auto differs = [&](const std::string& x, const std::string& y, const char* what) {
      if (x.empty() || y.empty()) return x != y;
      const auto u = numbers(a.file, what, x), v = numbers(b.file, what, y);
      if (u.size() != v.size()) return true;
      for (std::size_t i = 0; i < u.size(); ++i)
        if (std::abs(u[i] - v[i]) > 1e-4 * std::max(1.0, std::abs(u[i]))) return true;
      return false;
    };
    MEDSEG_CHECK_FILE(!differs(a.orientation, b.orientation, "Image Orientation (Patient)"), path,
                      "slices of different orientations (Image Orientation (Patient)): ", a.file, ", ", b.file);
    MEDSEG_CHECK_FILE(!differs(a.pixel_spacing, b.pixel_spacing, "Pixel Spacing"), path,
                      "slices of different Pixel Spacing: ", a.file, ", ", b.file);
  }
}

void check_size(const std::string& where, int64_t rows, int64_t columns, int64_t slices) {
  MEDSEG_CHECK_FILE(rows >= 1 && columns >= 1, where, "empty image (", rows, " rows, ", columns, " columns)");
  MEDSEG_CHECK_FILE(rows * columns * slices <= kMaxDicomVoxels, where, "series of ", slices, " x ", rows, " x ",
                    columns, " voxels, over the limit of ", kMaxDicomVoxels, " (", (kMaxDicomVoxels * 4) >> 30,
                    " GiB as float)");
}

// Frame `frame` of a file's stored samples as float: the stored bits sign-extended when signed,
// MONOCHROME1 inverted within the stored range (min + max - v, as GDCM and ITK do), then rescaled.
template <class T>
void decode_frame(const T* samples, const Header& h, long frame, float* dst) {
  const int64_t n = static_cast<int64_t>(h.rows) * h.columns;
  const int bits = static_cast<int>(h.bits_stored);
  const uint32_t mask = (uint32_t(1) << bits) - 1;
  const int64_t lo = h.is_signed ? -(int64_t(1) << (bits - 1)) : 0;
  const int64_t hi = h.is_signed ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  const bool invert = h.photometric == "MONOCHROME1";
  const double slope = h.slopes[static_cast<std::size_t>(frame)],
               intercept = h.intercepts[static_cast<std::size_t>(frame)];
  const T* src = samples + frame * n;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(src[i]) & mask;
    int64_t v = u;
    if (h.is_signed && ((u >> (bits - 1)) & 1u)) v -= int64_t(1) << bits;
    if (invert) v = lo + hi - v;
    dst[i] = static_cast<float>(slope * static_cast<double>(v) + intercept);
  }
}

// Decodes every frame of `h` into dst[frame] (rows x columns floats each).
void read_pixels(const Header& h, const std::vector<float*>& dst) {
  DcmFileFormat ff;
  const OFCondition ok = ff.loadFile(h.file.c_str());
  MEDSEG_CHECK_FILE(!ok.bad(), h.file, "cannot read the pixel data (", ok.text(), ")");
  DcmDataset* ds = ff.getDataset();
  MEDSEG_CHECK_FILE(
      !ds->chooseRepresentation(EXS_LittleEndianExplicit, nullptr).bad() && ds->canWriteXfer(EXS_LittleEndianExplicit),
      h.file, "cannot decode the pixel data: transfer syntax ", h.transfer_syntax,
      " (this build decodes uncompressed, JPEG, JPEG-LS and RLE)");
  const auto need = static_cast<unsigned long>(h.rows * h.columns * h.frames);
  const Uint8* bytes = nullptr;
  const Uint16* words = nullptr;
  unsigned long count = 0;
  if (h.bits_allocated == 16) {
    if (ds->findAndGetUint16Array(DCM_PixelData, words, &count).bad()) words = nullptr;
  } else if (ds->findAndGetUint8Array(DCM_PixelData, bytes, &count).bad()) {
    // 8-bit samples in an OW element (implicit VR): the words' bytes in little-endian order
    if (ds->findAndGetUint16Array(DCM_PixelData, words, &count).good()) {
      bytes = reinterpret_cast<const Uint8*>(words);
      count *= 2;
    }
    words = nullptr;
  }
  MEDSEG_CHECK_FILE((words != nullptr || bytes != nullptr) && count >= need, h.file, "the pixel data holds ", count,
                    " samples where Rows x Columns x frames need ", need, " (truncated or corrupt)");
  for (long f = 0; f < h.frames; ++f) {
    if (words != nullptr)
      decode_frame(words, h, f, dst[static_cast<std::size_t>(f)]);
    else
      decode_frame(bytes, h, f, dst[static_cast<std::size_t>(f)]);
  }
}

}  // namespace

std::vector<DicomSeriesEntry> list_dicom_series(const std::string& folder) {
  std::vector<DicomSeriesEntry> out;
  for (const auto& [uid, hs] : image_series(folder))
    out.push_back({uid, hs[0].description, hs[0].modality, static_cast<int>(hs.size())});
  return out;
}

namespace {

// A series' headers, checked and placed: slice i of `slices` (file order, frame order) goes to z_of[i].
struct Placed {
  std::vector<Header> headers;
  DicomSeriesGeometry geometry;
  std::vector<int64_t> z_of;
  int64_t frames = 0;
};

Placed place_series(const std::string& path, const std::string& series_uid) {
  const SeriesMap series = image_series(path);
  Placed p;
  p.headers = pick_series(path, series, series_uid);
  const std::vector<Header>& hs = p.headers;
  check_alike(path, hs);
  const Header& first = hs[0];
  for (const Header& h : hs) p.frames += h.frames;
  check_size(path, first.rows, first.columns, p.frames);
  std::vector<DicomSlice> slices;
  for (const Header& h : hs)
    for (long f = 0; f < h.frames; ++f)
      slices.push_back({h.frames > 1 ? concat(h.file, " frame ", f + 1) : h.file,
                        fixed<3>(h.file, h.positions[static_cast<std::size_t>(f)], "Image Position (Patient)")});
  p.geometry =
      series_geometry(path, std::move(slices), fixed<6>(first.file, first.orientation, "Image Orientation (Patient)"),
                      fixed<2>(first.file, first.pixel_spacing, "Pixel Spacing"), first.thickness);
  p.z_of.resize(p.geometry.order.size());
  for (std::size_t z = 0; z < p.geometry.order.size(); ++z) p.z_of[p.geometry.order[z]] = static_cast<int64_t>(z);
  return p;
}

}  // namespace

Volume read_dicom_series(const std::string& path, const std::string& series_uid) {
  const Placed p = place_series(path, series_uid);
  const Header& first = p.headers[0];
  const int64_t n_slice = static_cast<int64_t>(first.rows) * first.columns;
  std::vector<float> voxels(static_cast<std::size_t>(n_slice * p.frames));
  std::size_t next = 0;
  for (const Header& h : p.headers) {
    std::vector<float*> dst;
    for (long f = 0; f < h.frames; ++f) dst.push_back(voxels.data() + p.z_of[next++] * n_slice);
    read_pixels(h, dst);
  }
  return Volume::from_float({p.frames, first.rows, first.columns}, p.geometry.geometry, std::move(voxels));
}

DicomSeriesFiles dicom_series_files(const std::string& path, const std::string& series_uid) {
  const Placed p = place_series(path, series_uid);
  const Header& first = p.headers[0];
  DicomSeriesFiles out;
  out.instances.resize(static_cast<std::size_t>(p.frames));
  std::size_t next = 0;  // slices in file order, frame order, as place_series numbers them
  for (const Header& h : p.headers) {
    MEDSEG_CHECK_FILE(!h.sop_class.empty() && !h.sop_instance.empty(), h.file,
                      "no SOP Class/Instance UID to reference");
    for (long f = 0; f < h.frames; ++f)
      out.instances[static_cast<std::size_t>(p.z_of[next++])] = {h.file, h.sop_class, h.sop_instance,
                                                                 h.frames > 1 ? f + 1 : 0};
  }
  out.geometry = p.geometry.geometry;
  out.shape = {p.frames, first.rows, first.columns};
  return out;
}

}  // namespace medseg::io
