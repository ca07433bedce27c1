#pragma once
// For every stage's *_itk.cpp files (io, evaluation, preprocessing): call before any ITK object is made. Registers the
// image IO factories and creates ITK's process-wide globals on the calling thread, once, so that threads reading,
// writing or filtering images in parallel never create them concurrently.
#include <mutex>

namespace medseg::io {

void init_itk_globals_once();

// Held around every ImageIO::ReadImageInformation (also the one inside a reader's first
// UpdateOutputInformation). ITK 5.2's NiftiImageIO::ReadImageInformation assigns a
// function-local `static std::string prev` on every call (a leftover of its verbose-debugging
// code, removed upstream only in ITK 6): two threads reading headers at once assign one
// std::string concurrently, which ThreadSanitizer reports and which can free a buffer twice.
// Only header parsing is serialised; voxel decoding stays parallel.
std::mutex& itk_header_mutex();

}  // namespace medseg::io
