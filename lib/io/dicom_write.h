#pragma once
// What the DICOM writers of lib/io share (io/dicom_seg.h: the SEG and the RTSTRUCT): decimal strings, the
// source slices' references, and saving a file atomically. Internal to lib/io; DCMTK stays out of the header.
#include <string>
#include <vector>

class DcmFileFormat;  // DCMTK's

namespace medseg::io {

// A DICOM decimal string (DS): at most 16 characters.
std::string decimal_string(double v);

// A source slice as other objects reference it.
struct SourceInstance {
  std::string file, sop_class, sop_instance;
};

// Each file's SOP Class and Instance UIDs, read again from its header. FileError naming a file without them.
std::vector<SourceInstance> source_instances(const std::vector<std::string>& files);

// Saves `file` at `path` through a temporary file renamed into place, so that a reader never sees half a
// file and a failure leaves nothing. FileError("cannot write the <what>: saving (...)") on failure.
void save_atomically(DcmFileFormat& file, const std::string& path, const std::string& what);

}  // namespace medseg::io
