// io/dicom_seg.h's write_dicom_rtstruct: the RT Structure Set IOD (PS3.3 A.19) built element by element
// with DCMTK's dcmdata, which encodes it; the outlines come from io/mask_contours.h.
#include <dcmtk/dcmdata/dctk.h>

#include <ctime>

#include "core/error.h"
#include "io/dicom_seg.h"
#include "io/dicom_series.h"
#include "io/dicom_write.h"
#include "io/mask_contours.h"

namespace medseg::io {

namespace {

void check(const OFCondition& c, const std::string& path, const std::string& what) {
  MEDSEG_CHECK_FILE(!c.bad(), path, "cannot write the RTSTRUCT: ", what, " (", c.text(), ")");
}

void put(DcmItem& item, const DcmTagKey& key, const std::string& value, const std::string& path) {
  check(item.putAndInsertString(key, value.c_str()), path, DcmTag(key).getTagName());
}

DcmItem& append(DcmItem& parent, const DcmTagKey& sequence, const std::string& path) {
  DcmItem* item = nullptr;
  check(parent.findOrCreateSequenceItem(sequence, item, -2), path, DcmTag(sequence).getTagName());
  return *item;
}

// The source's patient and study (type 2 attributes written empty where the source has none).
void copy_patient_study(DcmDataset& from, DcmDataset& to, const std::string& path) {
  const DcmTagKey keys[] = {
      DCM_SpecificCharacterSet, DCM_PatientName, DCM_PatientID, DCM_PatientBirthDate,       DCM_PatientSex,
      DCM_StudyInstanceUID,     DCM_StudyDate,   DCM_StudyTime, DCM_ReferringPhysicianName, DCM_StudyID,
      DCM_AccessionNumber};
  for (const DcmTagKey& k : keys) {
    OFString v;
    if (from.findAndGetOFStringArray(k, v).good() || k != DCM_SpecificCharacterSet) put(to, k, v.c_str(), path);
  }
}

void add_contour_images(DcmItem& item, const std::vector<DicomInstance>& slices, const std::string& path) {
  for (const DicomInstance& s : slices) {
    DcmItem& ref = append(item, DCM_ContourImageSequence, path);
    put(ref, DCM_ReferencedSOPClassUID, s.sop_class, path);
    put(ref, DCM_ReferencedSOPInstanceUID, s.sop_instance, path);
    if (s.frame > 0) put(ref, DCM_ReferencedFrameNumber, std::to_string(s.frame), path);  // a multi-frame source
  }
}

// Slice z's outlines of `label` as contours in patient coordinates; false when the slice has none.
bool add_slice_contours(DcmItem& roi, const std::vector<double>& values, int64_t z, const std::array<int64_t, 3>& shape,
                        const Geometry& g, double label, const DicomInstance& slice, const std::string& path) {
  const int64_t rows = shape[1], cols = shape[2], n = rows * cols;
  std::vector<uint8_t> mask(static_cast<std::size_t>(n));
  bool any = false;
  for (int64_t i = 0; i < n; ++i)
    any |= (mask[static_cast<std::size_t>(i)] = values[static_cast<std::size_t>(z * n + i)] == label);
  if (!any) return false;
  const auto& d = g.direction;
  for (const Contour& c : mask_contours(mask.data(), rows, cols)) {
    std::string data;
    for (const auto& v : c) {
      // index (column, row, z) -> patient: origin + direction * (index * spacing)
      const double i = v[0] * g.spacing[0], j = v[1] * g.spacing[1], k = static_cast<double>(z) * g.spacing[2];
      for (int a = 0; a < 3; ++a)
        data += (data.empty() ? "" : "\\") +
                decimal_string(g.origin[a] + d[a * 3] * i + d[a * 3 + 1] * j + d[a * 3 + 2] * k);
    }
    DcmItem& item = append(roi, DCM_ContourSequence, path);
    add_contour_images(item, {slice}, path);
    put(item, DCM_ContourGeometricType, "CLOSED_PLANAR", path);
    put(item, DCM_NumberOfContourPoints, std::to_string(c.size()), path);
    put(item, DCM_ContourData, data, path);
  }
  return true;
}

// The source series' identifiers the structure set refers to.
struct SourceIds {
  OFString frame_of_reference, study, series, position_reference;
};

// The SOP common, patient, study, series, frame of reference and structure set modules.
void put_structure_set_modules(DcmDataset& out, DcmDataset& head, const SourceIds& ids, const DicomSegInfo& info,
                               const std::string& path) {
  char uid[100];
  char now[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(now, sizeof now, "%Y%m%d%H%M%S", std::gmtime(&t));
  const std::string date(now, 8), time(now + 8, 6);
  put(out, DCM_SOPClassUID, UID_RTStructureSetStorage, path);
  put(out, DCM_SOPInstanceUID, dcmGenerateUniqueIdentifier(uid, SITE_INSTANCE_UID_ROOT), path);
  copy_patient_study(head, out, path);
  put(out, DCM_Modality, "RTSTRUCT", path);
  put(out, DCM_FrameOfReferenceUID, ids.frame_of_reference.c_str(), path);  // the Frame of Reference module
  put(out, DCM_PositionReferenceIndicator, ids.position_reference.c_str(), path);
  put(out, DCM_SeriesInstanceUID, dcmGenerateUniqueIdentifier(uid, SITE_SERIES_UID_ROOT), path);
  put(out, DCM_SeriesNumber, "902", path);
  put(out, DCM_SeriesDescription, info.description.substr(0, 64), path);
  put(out, DCM_Manufacturer, "medseg", path);
  put(out, DCM_SoftwareVersions, info.version.empty() ? "unknown" : info.version, path);
  put(out, DCM_OperatorsName, "", path);
  put(out, DCM_InstanceNumber, "1", path);
  put(out, DCM_StructureSetLabel, "MEDSEG", path);
  put(out, DCM_StructureSetDate, date, path);
  put(out, DCM_StructureSetTime, time, path);
}

// The Referenced Frame of Reference Sequence: the source study and series, and every slice as a contour image.
void put_referenced_frame(DcmDataset& out, const SourceIds& ids, const std::vector<DicomInstance>& slices,
                          const std::string& path) {
  DcmItem& frame = append(out, DCM_ReferencedFrameOfReferenceSequence, path);
  put(frame, DCM_FrameOfReferenceUID, ids.frame_of_reference.c_str(), path);
  DcmItem& study = append(frame, DCM_RTReferencedStudySequence, path);
  put(study, DCM_ReferencedSOPClassUID, "1.2.840.10008.3.1.2.3.1", path);  // Study Component Management, as RT uses
  put(study, DCM_ReferencedSOPInstanceUID, ids.study.c_str(), path);
  DcmItem& series = append(study, DCM_RTReferencedSeriesSequence, path);
  put(series, DCM_SeriesInstanceUID, ids.series.c_str(), path);
  add_contour_images(series, slices, path);
}

// One ROI, number `n`: its Structure Set ROI, ROI Contour (with the contours of `roi_contour`) and RT ROI
// Observations items.
void add_roi(DcmDataset& out, DcmItem& roi_contour, const DicomSegSegment& s, const std::string& n,
             const SourceIds& ids, const std::string& path) {
  DcmItem& roi = append(out, DCM_StructureSetROISequence, path);
  put(roi, DCM_ROINumber, n, path);
  put(roi, DCM_ReferencedFrameOfReferenceUID, ids.frame_of_reference.c_str(), path);
  put(roi, DCM_ROIName, s.name.substr(0, 64), path);
  put(roi, DCM_ROIGenerationAlgorithm, "AUTOMATIC", path);
  DcmItem& contour = append(out, DCM_ROIContourSequence, path);
  put(contour, DCM_ROIDisplayColor,
      std::to_string(s.rgb[0]) + "\\" + std::to_string(s.rgb[1]) + "\\" + std::to_string(s.rgb[2]), path);
  DcmSequenceOfItems* seq = nullptr;
  check(roi_contour.findAndGetSequence(DCM_ContourSequence, seq, OFFalse, OFTrue), path, "the contours");
  check(contour.insert(new DcmSequenceOfItems(*seq)), path, "the contours");
  put(contour, DCM_ReferencedROINumber, n, path);
  DcmItem& obs = append(out, DCM_RTROIObservationsSequence, path);
  put(obs, DCM_ObservationNumber, n, path);
  put(obs, DCM_ReferencedROINumber, n, path);
  put(obs, DCM_RTROIInterpretedType, "ORGAN", path);
  put(obs, DCM_ROIInterpreter, "", path);
}

}  // namespace

void write_dicom_rtstruct(const std::string& path, const Volume& labels, const std::string& source,
                          const std::string& series_uid, const DicomSegInfo& info) {
  const DicomSeriesFiles src = referenced_series(path, labels, source, series_uid, "RTSTRUCT");
  const std::vector<DicomInstance>& slices = src.instances;
  DcmFileFormat first;
  check(first.loadFileUntilTag(slices[0].file.c_str(), EXS_Unknown, EGL_noChange, DCM_MaxReadLength, ERM_autoDetect,
                               DCM_PixelData),
        slices[0].file, "reading the source");
  DcmDataset& head = *first.getDataset();
  SourceIds ids;
  head.findAndGetOFString(DCM_FrameOfReferenceUID, ids.frame_of_reference);
  head.findAndGetOFString(DCM_StudyInstanceUID, ids.study);
  head.findAndGetOFString(DCM_SeriesInstanceUID, ids.series);
  head.findAndGetOFString(DCM_PositionReferenceIndicator, ids.position_reference);

  DcmFileFormat file;
  DcmDataset& out = *file.getDataset();
  put_structure_set_modules(out, head, ids, info, path);
  put_referenced_frame(out, ids, slices, path);
  const std::vector<double> values = labels.to_double();
  int number = 0;
  for (const DicomSegSegment& s : info.segments) {
    DcmItem roi_contour;
    bool any = false;
    for (int64_t z = 0; z < src.shape[0]; ++z)
      any |= add_slice_contours(roi_contour, values, z, src.shape, src.geometry, static_cast<double>(s.label),
                                slices[static_cast<std::size_t>(z)], path);
    if (any) add_roi(out, roi_contour, s, std::to_string(++number), ids, path);  // a label without a voxel: no ROI
  }
  if (number == 0) {  // nothing found: the sequences are required, and may be empty
    check(out.insertEmptyElement(DCM_StructureSetROISequence), path, "Structure Set ROI Sequence");
    check(out.insertEmptyElement(DCM_ROIContourSequence), path, "ROI Contour Sequence");
    check(out.insertEmptyElement(DCM_RTROIObservationsSequence), path, "RT ROI Observations Sequence");
  }
  save_atomically(file, path, "RTSTRUCT");
}

}  // namespace medseg::io
