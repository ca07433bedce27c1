#pragma once
// Internal to lib/io's *_itk.cpp files: call before any ITK object is made. Registers the image
// IO factories and creates ITK's process-wide globals on the calling thread, once, so that
// threads reading, writing or filtering images in parallel never create them concurrently.
namespace medseg::io {

void init_itk_globals_once();

}  // namespace medseg::io
