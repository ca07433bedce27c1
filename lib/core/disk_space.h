#pragma once
// Free space, checked before a command writes something large that it knows the size of (a model
// zip's files): a full disk then stops the command with one line before anything is written,
// instead of in the middle of it.
#include <cstdint>
#include <string>

namespace medseg {

// Bytes an unprivileged process may still write on the file system that holds `path`, or would
// hold it: the nearest existing folder of `path` and its parents is asked (statvfs).
// Throws FileError naming that folder when it cannot be asked.
uint64_t free_bytes(const std::string& path);

// Throws FileError(path, "needs N bytes (<what>) but the file system has only M free; nothing was
// written") when `needed` is more than free_bytes(path).
void check_free_space(const std::string& path, uint64_t needed, const std::string& what);

// "1.5 GiB", "22.0 MiB", "512 bytes": sizes in messages.
std::string byte_size_text(uint64_t bytes);

}  // namespace medseg
