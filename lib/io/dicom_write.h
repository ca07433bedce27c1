#pragma once
// What the DICOM writers of lib/io share (io/dicom_seg.h: the SEG and the RTSTRUCT): decimal strings and
// saving a file atomically. Internal to lib/io; DCMTK stays out of the header.
#include <string>

class DcmFileFormat;  // DCMTK's

namespace medseg::io {

// A DICOM decimal string (DS): at most 16 characters.
std::string decimal_string(double v);

// Saves `file` at `path` through a temporary file renamed into place, so that a reader never sees half a
// file and a failure leaves nothing. FileError("cannot write the <what>: saving (...)") on failure.
void save_atomically(DcmFileFormat& file, const std::string& path, const std::string& what);

}  // namespace medseg::io
