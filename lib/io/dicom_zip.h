#pragma once
// A case folder of DICOM series as one .zip (docs/dicom.md): extracted into a folder medseg owns, where
// io/dicom_series.h reads it like any series folder.
#include <cstdint>
#include <string>

namespace medseg::io {

constexpr int64_t kMaxDicomZipEntries = 100000;
constexpr int64_t kMaxDicomZipBytes = int64_t(8) << 30;  // 8 GiB uncompressed in all

// True when `path` is a regular file named .zip that starts with a zip's local header ("PK\3\4").
bool is_zip_file(const std::string& path);

// Extracts the zip's files into `dest` (created; must not exist). No name from the zip becomes a path:
// each file is written as its entry index, inside dest/NNNN/ when its folder in the zip is a channel
// folder NNNN (0000, 0001, ...), else directly in dest. FileError naming the zip for more than
// kMaxDicomZipEntries entries or kMaxDicomZipBytes declared in all (checked before anything is written),
// for data beyond an entry's declared size, and for a damaged archive.
void extract_dicom_zip(const std::string& zip, const std::string& dest);

}  // namespace medseg::io
