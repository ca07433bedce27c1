// io/dicom_seg.h on DCMTK's dcmseg: DCMTK builds and encodes the Segmentation IOD (modules, functional
// groups, bit-packed frames); medseg decides the segments, frames and references.
#include <dcmtk/dcmdata/dctk.h>
#include <dcmtk/dcmfg/fgderimg.h>
#include <dcmtk/dcmfg/fgfracon.h>
#include <dcmtk/dcmfg/fgpixmsr.h>
#include <dcmtk/dcmfg/fgplanor.h>
#include <dcmtk/dcmfg/fgplanpo.h>
#include <dcmtk/dcmiod/iodreferences.h>
#include <dcmtk/dcmseg/segdoc.h>
#include <dcmtk/dcmseg/segment.h>

#include <cmath>
#include <memory>

#include "core/error.h"
#include "io/dicom_seg.h"
#include "io/dicom_series.h"
#include "io/dicom_write.h"

namespace medseg::io {

namespace {

void check(const OFCondition& c, const std::string& path, const std::string& what) {
  MEDSEG_CHECK_FILE(!c.bad(), path, "cannot write the DICOM SEG: ", what, " (", c.text(), ")");
}

// sRGB (0..255) -> CIELab (D65) scaled as DICOM's Recommended Display CIELab Value (PS3.3 C.10.7.1.1).
std::array<Uint16, 3> cielab(const std::array<uint8_t, 3>& rgb) {
  auto lin = [](uint8_t c) {
    const double v = c / 255.0;
    return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  const double r = lin(rgb[0]), g = lin(rgb[1]), b = lin(rgb[2]);
  const double x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, y = 0.2126 * r + 0.7152 * g + 0.0722 * b,
               z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  auto f = [](double t) { return t > 216.0 / 24389 ? std::cbrt(t) : (24389.0 / 27 * t + 16) / 116; };
  const double L = 116 * f(y) - 16, A = 500 * (f(x) - f(y)), B = 200 * (f(y) - f(z));
  auto scale = [](double v, double lo, double hi) {
    return static_cast<Uint16>(std::lround(std::min(std::max((v - lo) / (hi - lo), 0.0), 1.0) * 65535));
  };
  return {scale(L, 0, 100), scale(A, -128, 127), scale(B, -128, 127)};
}

std::unique_ptr<DcmSegmentation> create(const std::string& path, int64_t rows, int64_t columns,
                                        const DicomSegInfo& info) {
  MEDSEG_CHECK_FILE(rows <= 65535 && columns <= 65535, path, "cannot write the DICOM SEG: slices over 65535 pixels");
  // dcmseg wants every field of the equipment: medseg has no device serial number, so "0".
  IODGeneralEquipmentModule::EquipmentInfo eq("medseg", "medseg", "0", info.version.empty() ? "unknown" : info.version);
  ContentIdentificationMacro ci("1", "MEDSEG", info.description.substr(0, 64), "medseg");
  DcmSegmentation* raw = nullptr;
  check(DcmSegmentation::createBinarySegmentation(raw, static_cast<Uint16>(rows), static_cast<Uint16>(columns), eq, ci),
        path, "creating the object");
  return std::unique_ptr<DcmSegmentation>(raw);
}

// Pixel measures and orientation are the same for every frame; the dimensions index frames by segment
// and position, as viewers expect.
void add_shared(DcmSegmentation& seg, const std::string& path, const Geometry& g) {
  FGPixelMeasures meas;
  check(meas.setPixelSpacing((decimal_string(g.spacing[1]) + "\\" + decimal_string(g.spacing[0])).c_str()), path,
        "Pixel Spacing");
  check(meas.setSliceThickness(decimal_string(g.spacing[2]).c_str()), path, "Slice Thickness");
  check(meas.setSpacingBetweenSlices(decimal_string(g.spacing[2]).c_str()), path, "Spacing Between Slices");
  check(seg.addForAllFrames(meas), path, "the pixel measures");
  FGPlaneOrientationPatient planor;
  const auto& d = g.direction;
  check(planor.setImageOrientationPatient(decimal_string(d[0]).c_str(), decimal_string(d[3]).c_str(),
                                          decimal_string(d[6]).c_str(), decimal_string(d[1]).c_str(),
                                          decimal_string(d[4]).c_str(), decimal_string(d[7]).c_str()),
        path, "Image Orientation (Patient)");
  check(seg.addForAllFrames(planor), path, "the orientation");
  char uid[100];
  dcmGenerateUniqueIdentifier(uid, SITE_INSTANCE_UID_ROOT);
  IODMultiframeDimensionModule& dims = seg.getDimensions();
  check(dims.addDimensionIndex(DCM_ReferencedSegmentNumber, uid, DCM_SegmentIdentificationSequence, "Segment"), path,
        "the segment dimension");
  check(dims.addDimensionIndex(DCM_ImagePositionPatient, uid, DCM_PlanePositionSequence, "Position"), path,
        "the position dimension");
}

Uint16 add_segment(DcmSegmentation& seg, const std::string& path, const DicomSegSegment& s, const DicomSegInfo& info) {
  DcmSegment* segment = nullptr;
  check(DcmSegment::create(
            segment, s.name.substr(0, 64).c_str(),
            CodeSequenceMacro(s.category.value.c_str(), s.category.scheme.c_str(), s.category.meaning.c_str()),
            CodeSequenceMacro(s.type.value.c_str(), s.type.scheme.c_str(), s.type.meaning.c_str()),
            DcmSegTypes::SAT_AUTOMATIC, info.algorithm.c_str()),
        path, "segment '" + s.name + "'");
  // The algorithm's family, CID 7162: Artificial Intelligence.
  AlgorithmIdentificationMacro& algo = segment->getSegmentationAlgorithmIdentification();
  algo.getAlgorithmFamilyCode().set("123110", "DCM", "Artificial Intelligence");
  // dcmseg writes the Segmentation Algorithm Identification Sequence only when family, name and version
  // are all set; a missing one drops it silently.
  check(algo.setAlgorithmName(info.algorithm.c_str()), path, "Algorithm Name");
  check(algo.setAlgorithmVersion(info.version.empty() ? "unknown" : info.version.c_str()), path, "Algorithm Version");
  if (!info.parameters.empty()) algo.setAlgorithmParameters(info.parameters.c_str());
  const auto lab = cielab(s.rgb);
  segment->setRecommendedDisplayCIELabValue(lab[0], lab[1], lab[2]);
  Uint16 number = 0;
  const OFCondition ok = seg.addSegment(segment, number);
  if (ok.bad()) delete segment;
  check(ok, path, "segment '" + s.name + "'");
  return number;
}

// One frame: slice z's mask of segment `number`, its position and the source slice it derives from.
void add_frame(DcmSegmentation& seg, const std::string& path, std::vector<Uint8>& mask, Uint16 number, int64_t z,
               const Geometry& g, const DicomInstance& src) {
  std::array<double, 3> p{};
  for (int i = 0; i < 3; ++i) p[i] = g.origin[i] + static_cast<double>(z) * g.spacing[2] * g.direction[i * 3 + 2];
  std::unique_ptr<FGPlanePosPatient> pos(FGPlanePosPatient::createMinimal(
      decimal_string(p[0]).c_str(), decimal_string(p[1]).c_str(), decimal_string(p[2]).c_str()));
  FGFrameContent content;
  check(content.setDimensionIndexValues(number, 0), path, "a frame's segment index");
  check(content.setDimensionIndexValues(static_cast<Uint32>(z + 1), 1), path, "a frame's position index");
  ImageSOPInstanceReferenceMacro* ref = nullptr;
  check(ImageSOPInstanceReferenceMacro::create(src.sop_class.c_str(), src.sop_instance.c_str(), ref), path,
        "a source reference");
  // The frame of a multi-frame source (checked to fit in 16 bits in write_dicom_seg).
  if (src.frame > 0) {
    const OFCondition ok = ref->addReferencedFrameNumber(static_cast<Uint16>(src.frame));
    if (ok.bad()) delete ref;
    check(ok, path, "a source frame reference");
  }
  OFVector<ImageSOPInstanceReferenceMacro> refs;
  refs.push_back(*ref);
  delete ref;
  std::unique_ptr<FGDerivationImage> derivation(FGDerivationImage::createMinimal(
      refs, "Segmentation", CodeSequenceMacro("113076", "DCM", "Segmentation"),
      CodeSequenceMacro("121322", "DCM", "Source image for image processing operation")));
  MEDSEG_CHECK_FILE(pos && derivation, path, "cannot write the DICOM SEG: a frame's functional groups");
  OFVector<FGBase*> groups;
  groups.push_back(pos.get());
  groups.push_back(&content);
  groups.push_back(derivation.get());
  check(seg.addFrame(mask.data(), number, groups), path, concat("the frame of slice ", z + 1));
}

// Every frame lies on its source slice's pixels, which readers want to be told (Spatial Locations Preserved,
// YES) before they map frames to source images; DCMTK 3.6.7's dcmfg has no setter for it.
void mark_spatial_locations_preserved(DcmDataset& ds) {
  DcmSequenceOfItems* frames = nullptr;
  if (ds.findAndGetSequence(DCM_PerFrameFunctionalGroupsSequence, frames).bad() || frames == nullptr) return;
  for (unsigned long f = 0; f < frames->card(); ++f) {
    DcmItem* derivation = nullptr;
    for (long d = 0; frames->getItem(f)->findAndGetSequenceItem(DCM_DerivationImageSequence, derivation, d).good();
         ++d) {
      DcmItem* source = nullptr;
      for (long k = 0; derivation->findAndGetSequenceItem(DCM_SourceImageSequence, source, k).good(); ++k)
        source->putAndInsertString(DCM_SpatialLocationsPreserved, "YES");
    }
  }
}

}  // namespace

DicomCode generic_category() { return {"91723000", "SCT", "Anatomical Structure"}; }
DicomCode generic_type() { return {"85756007", "SCT", "Tissue"}; }

void write_dicom_seg(const std::string& path, const Volume& labels, const std::string& source,
                     const std::string& series_uid, const DicomSegInfo& info) {
  const DicomSeriesFiles src = referenced_series(path, labels, source, series_uid, "DICOM SEG");
  MEDSEG_CHECK_FILE(is_integer_type(labels.pixel_type()), path, "cannot write the DICOM SEG: labels must be integer");
  const auto [depth, rows, columns] = src.shape;
  std::unique_ptr<DcmSegmentation> seg = create(path, rows, columns, info);
  const std::vector<DicomInstance>& slices = src.instances;
  // dcmiod takes Referenced Frame Number as 16 bits
  MEDSEG_CHECK_FILE(slices[0].frame <= 0 || slices.size() <= 65535, path,
                    "cannot write the DICOM SEG: a multi-frame source of more than 65535 frames");
  check(seg->importFromSourceImage(OFString(slices[0].file.c_str())), path,
        "the patient and study of " + slices[0].file);
  seg->getSeries().setSeriesDescription(info.description.substr(0, 64).c_str());
  seg->getSeries().setSeriesNumber("901");
  add_shared(*seg, path, src.geometry);
  const std::vector<double> values = labels.to_double();
  const int64_t n = rows * columns;
  std::vector<Uint8> mask(static_cast<std::size_t>(n));
  int frames = 0;
  for (const DicomSegSegment& s : info.segments) {
    Uint16 number = 0;
    for (int64_t z = 0; z < depth; ++z) {
      bool any = false;
      for (int64_t i = 0; i < n; ++i) {
        mask[static_cast<std::size_t>(i)] = values[static_cast<std::size_t>(z * n + i)] == static_cast<double>(s.label);
        any = any || mask[static_cast<std::size_t>(i)];
      }
      if (!any) continue;  // empty frames are left out
      if (number == 0) number = add_segment(*seg, path, s, info);
      add_frame(*seg, path, mask, number, z, src.geometry, slices[static_cast<std::size_t>(z)]);
      ++frames;
    }
  }
  if (frames == 0) {
    // Nothing found: a SEG holds at least one frame, so the first segment keeps slice 1's empty frame
    // (what highdicom writes for an empty segmentation).
    MEDSEG_CHECK_FILE(!info.segments.empty(), path, "cannot write the DICOM SEG: the model has no foreground label");
    std::fill(mask.begin(), mask.end(), Uint8{0});
    add_frame(*seg, path, mask, add_segment(*seg, path, info.segments[0], info), 0, src.geometry, slices[0]);
  }
  IODReferences refs;
  OFVector<OFString> files;  // each file once: a multi-frame source holds every slice
  for (const DicomInstance& s : slices)
    if (files.empty() || files.back() != s.file.c_str()) files.push_back(s.file.c_str());
  refs.addFromFiles(files, IODReference::LEVEL_STUDY);
  seg->getCommonInstanceReference().addReferences(refs);
  DcmFileFormat file;
  check(seg->writeDataset(*file.getDataset()), path, "encoding");
  mark_spatial_locations_preserved(*file.getDataset());
  save_atomically(file, path, "DICOM SEG");
}

}  // namespace medseg::io
