#include "support/dicom_writer.h"

#include <gdcmDataElement.h>
#include <gdcmItem.h>
#include <gdcmSequenceOfItems.h>
#include <gdcmFile.h>
#include <gdcmTag.h>
#include <gdcmUIDGenerator.h>
#include <gdcmWriter.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace medseg::test {

namespace {

std::string ds_list(const double* v, int n) {
  std::ostringstream out;
  out.precision(10);
  for (int i = 0; i < n; ++i) out << (i ? "\\" : "") << v[i];
  return out.str();
}

// One element, its value as DICOM encodes it: text padded to an even length (UIDs with a NUL, the
// rest with a space), US as two little-endian bytes, OW as the samples' bytes.
void put(gdcm::DataSet& ds, uint16_t group, uint16_t element, gdcm::VR vr, std::string value) {
  if (value.size() % 2) value += vr == gdcm::VR::UI ? '\0' : ' ';
  gdcm::DataElement de(gdcm::Tag(group, element));
  de.SetVR(vr);
  de.SetByteValue(value.data(), static_cast<uint32_t>(value.size()));
  ds.Replace(de);
}

void put_us(gdcm::DataSet& ds, uint16_t group, uint16_t element, int v) {
  const char b[2] = {static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff)};
  put(ds, group, element, gdcm::VR::US, std::string(b, 2));
}

void write_slice(const std::string& file, const DicomSeriesSpec& s, int k) {
  gdcm::Writer w;
  gdcm::File& f = w.GetFile();
  f.GetHeader().SetDataSetTransferSyntax(gdcm::TransferSyntax::ExplicitVRLittleEndian);
  gdcm::DataSet& ds = f.GetDataSet();
  gdcm::UIDGenerator uids;
  put(ds, 0x0008, 0x0016, gdcm::VR::UI, s.sop_class);
  put(ds, 0x0008, 0x0018, gdcm::VR::UI, uids.Generate());
  put(ds, 0x0008, 0x0060, gdcm::VR::CS, s.modality);
  put(ds, 0x0008, 0x103e, gdcm::VR::LO, s.description);
  put(ds, 0x0010, 0x0010, gdcm::VR::PN, "Synthetic^Test");
  put(ds, 0x0010, 0x0020, gdcm::VR::LO, "medseg-test");
  put(ds, 0x0018, 0x0050, gdcm::VR::DS, ds_list(&s.slice_step, 1));
  put(ds, 0x0020, 0x000d, gdcm::VR::UI, s.study_uid);
  put(ds, 0x0020, 0x000e, gdcm::VR::UI, s.series_uid);
  put(ds, 0x0020, 0x0013, gdcm::VR::IS, std::to_string(k + 1));
  const std::array<double, 3> p = slice_position(s, k);
  put(ds, 0x0020, 0x0032, gdcm::VR::DS, ds_list(p.data(), 3));
  put(ds, 0x0020, 0x0037, gdcm::VR::DS, ds_list(s.orientation.data(), 6));
  put(ds, 0x0020, 0x0052, gdcm::VR::UI, s.for_uid);
  put_us(ds, 0x0028, 0x0002, 1);
  put(ds, 0x0028, 0x0004, gdcm::VR::CS, s.photometric);
  put_us(ds, 0x0028, 0x0010, s.declared_rows > 0 ? s.declared_rows : s.rows);
  put_us(ds, 0x0028, 0x0011, s.declared_columns > 0 ? s.declared_columns : s.columns);
  put(ds, 0x0028, 0x0030, gdcm::VR::DS, ds_list(s.pixel_spacing.data(), 2));
  put_us(ds, 0x0028, 0x0100, 16);
  put_us(ds, 0x0028, 0x0101, s.bits_stored);
  put_us(ds, 0x0028, 0x0102, s.bits_stored - 1);
  put_us(ds, 0x0028, 0x0103, s.is_signed ? 1 : 0);
  if (s.slope != 1 || s.intercept != 0) {
    put(ds, 0x0028, 0x1052, gdcm::VR::DS, ds_list(&s.intercept, 1));
    put(ds, 0x0028, 0x1053, gdcm::VR::DS, ds_list(&s.slope, 1));
  }
  std::string px;
  for (int r = 0; r < s.rows; ++r)
    for (int c = 0; c < s.columns; ++c) {
      const int v = s.raw(k, r, c);
      px += static_cast<char>(v & 0xff);
      px += static_cast<char>((v >> 8) & 0xff);
    }
  put(ds, 0x7fe0, 0x0010, gdcm::VR::OW, px);
  w.SetFileName(file.c_str());
  if (!w.Write()) throw std::runtime_error("dicom_writer: cannot write " + file);
}

gdcm::DataElement sequence(uint16_t group, uint16_t element, const std::vector<gdcm::DataSet>& items) {
  gdcm::SmartPointer<gdcm::SequenceOfItems> sq = new gdcm::SequenceOfItems;
  sq->SetLengthToUndefined();
  for (const gdcm::DataSet& d : items) {
    gdcm::Item item;
    item.SetVLToUndefined();
    item.SetNestedDataSet(d);
    sq->AddItem(item);
  }
  gdcm::DataElement de(gdcm::Tag(group, element));
  de.SetVR(gdcm::VR::SQ);
  de.SetValue(*sq);
  de.SetVLToUndefined();
  return de;
}

// One functional group: a sequence of one item holding `fill`'s elements.
gdcm::DataElement group(uint16_t g, uint16_t e, const std::function<void(gdcm::DataSet&)>& fill) {
  gdcm::DataSet d;
  fill(d);
  return sequence(g, e, {d});
}

}  // namespace

std::string write_enhanced_dicom(const std::string& file, const DicomSeriesSpec& s) {
  gdcm::Writer w;
  gdcm::File& out = w.GetFile();
  out.GetHeader().SetDataSetTransferSyntax(gdcm::TransferSyntax::ExplicitVRLittleEndian);
  gdcm::DataSet& ds = out.GetDataSet();
  gdcm::UIDGenerator uids;
  put(ds, 0x0008, 0x0016, gdcm::VR::UI, "1.2.840.10008.5.1.4.1.1.2.1");  // Enhanced CT Image Storage
  put(ds, 0x0008, 0x0018, gdcm::VR::UI, uids.Generate());
  put(ds, 0x0008, 0x0060, gdcm::VR::CS, s.modality);
  put(ds, 0x0008, 0x103e, gdcm::VR::LO, s.description);
  put(ds, 0x0020, 0x000d, gdcm::VR::UI, s.study_uid);
  put(ds, 0x0020, 0x000e, gdcm::VR::UI, s.series_uid);
  put(ds, 0x0020, 0x0052, gdcm::VR::UI, s.for_uid);
  put_us(ds, 0x0028, 0x0002, 1);
  put(ds, 0x0028, 0x0004, gdcm::VR::CS, s.photometric);
  put(ds, 0x0028, 0x0008, gdcm::VR::IS, std::to_string(s.slices));
  put_us(ds, 0x0028, 0x0010, s.rows);
  put_us(ds, 0x0028, 0x0011, s.columns);
  put_us(ds, 0x0028, 0x0100, 16);
  put_us(ds, 0x0028, 0x0101, s.bits_stored);
  put_us(ds, 0x0028, 0x0102, s.bits_stored - 1);
  put_us(ds, 0x0028, 0x0103, s.is_signed ? 1 : 0);
  // Shared: pixel measures and orientation. Per frame: position and rescale. Frame f holds slice
  // slices - 1 - f, so a reader must sort the frames by position.
  gdcm::DataSet shared;
  shared.Replace(group(0x0028, 0x9110, [&](gdcm::DataSet& d) {
    put(d, 0x0028, 0x0030, gdcm::VR::DS, ds_list(s.pixel_spacing.data(), 2));
    put(d, 0x0018, 0x0050, gdcm::VR::DS, ds_list(&s.slice_step, 1));
  }));
  shared.Replace(group(0x0020, 0x9116, [&](gdcm::DataSet& d) {
    put(d, 0x0020, 0x0037, gdcm::VR::DS, ds_list(s.orientation.data(), 6));
  }));
  ds.Replace(sequence(0x5200, 0x9229, {shared}));
  std::vector<gdcm::DataSet> frames;
  std::string px;
  for (int f = 0; f < s.slices; ++f) {
    const int k = s.slices - 1 - f;
    gdcm::DataSet frame;
    const std::array<double, 3> p = slice_position(s, k);
    frame.Replace(
        group(0x0020, 0x9113, [&](gdcm::DataSet& d) { put(d, 0x0020, 0x0032, gdcm::VR::DS, ds_list(p.data(), 3)); }));
    frame.Replace(group(0x0028, 0x9145, [&](gdcm::DataSet& d) {
      put(d, 0x0028, 0x1052, gdcm::VR::DS, ds_list(&s.intercept, 1));
      put(d, 0x0028, 0x1053, gdcm::VR::DS, ds_list(&s.slope, 1));
      put(d, 0x0028, 0x1054, gdcm::VR::LO, "HU");
    }));
    frames.push_back(frame);
    for (int r = 0; r < s.rows; ++r)
      for (int c = 0; c < s.columns; ++c) {
        const int v = s.raw(k, r, c);
        px += static_cast<char>(v & 0xff);
        px += static_cast<char>((v >> 8) & 0xff);
      }
  }
  ds.Replace(sequence(0x5200, 0x9230, frames));
  put(ds, 0x7fe0, 0x0010, gdcm::VR::OW, px);
  std::filesystem::create_directories(std::filesystem::path(file).parent_path());
  w.SetFileName(file.c_str());
  if (!w.Write()) throw std::runtime_error("dicom_writer: cannot write " + file);
  return file;
}

std::array<double, 3> slice_normal(const DicomSeriesSpec& s) {
  const auto& o = s.orientation;
  return {o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]};
}

std::array<double, 3> slice_position(const DicomSeriesSpec& s, int k) {
  if (s.position) return s.position(k);
  const auto n = slice_normal(s);
  std::array<double, 3> p{};
  for (int i = 0; i < 3; ++i) p[i] = s.first_position[i] + k * s.slice_step * n[i];
  return p;
}

std::vector<std::string> write_dicom_series(const std::string& folder, const DicomSeriesSpec& s,
                                            const std::string& prefix) {
  std::filesystem::create_directories(folder);
  std::vector<std::string> files;
  for (int k = 0; k < s.slices; ++k) {
    files.push_back(folder + "/" + prefix + std::to_string(s.slices - 1 - k) + ".dcm");
    write_slice(files.back(), s, k);
  }
  return files;
}

}  // namespace medseg::test
