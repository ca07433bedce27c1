// The one place that sets ITK up for use from many threads (see itk_globals.h).
#include <itkBMPImageIOFactory.h>
#include <itkFloatingPointExceptions.h>
#include <itkGiplImageIOFactory.h>
#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <itkMetaImageIO.h>
#include <itkMetaImageIOFactory.h>
#include <itkMultiThreaderBase.h>
#include <itkNiftiImageIOFactory.h>
#include <itkNrrdImageIOFactory.h>
#include <itkOutputWindow.h>
#include <itkPNGImageIOFactory.h>
#include <itkTIFFImageIOFactory.h>

#include <mutex>

#include "io/itk_globals.h"

namespace medseg::io {
namespace {

// ITK 5.2 creates its process-wide globals lazily, on first use, in an unlocked std::map
// (itk::SingletonIndex). Two threads reading or writing their first image at once could both
// insert: heap corruption that surfaced as a double free or a hang at exit, in 1 of ~5 runs of
// a multi-threaded medseg_make_dataset. So every global that image IO touches is created here,
// once, before any worker gets past this point: the list is every itk::Singleton<T> in
// libITKCommon and libITKIOMeta that IO reaches (nm -C | grep Singleton).
void init_itk_globals() {
  itk::Object::GetGlobalWarningDisplay();
  itk::OutputWindow::GetInstance();
  itk::FloatingPointExceptions::GetEnabled();
  itk::MultiThreaderBase::GetGlobalDefaultNumberOfThreads();
  itk::MetaImageIO::GetDefaultDoublePrecision();
  itk::NiftiImageIOFactory::RegisterOneFactory();
  itk::NrrdImageIOFactory::RegisterOneFactory();
  itk::MetaImageIOFactory::RegisterOneFactory();
  itk::PNGImageIOFactory::RegisterOneFactory();
  itk::BMPImageIOFactory::RegisterOneFactory();
  itk::TIFFImageIOFactory::RegisterOneFactory();
  itk::GiplImageIOFactory::RegisterOneFactory();
  // A reader and a writer: their ProcessObject base makes the multi-threader (and its thread
  // pool) and bumps the global time stamp; every image IO is instantiated as CreateImageIO does.
  using ImageT = itk::Image<float, 3>;
  itk::ImageFileReader<ImageT>::New();
  itk::ImageFileWriter<ImageT>::New();
  itk::ObjectFactoryBase::CreateAllInstance("itkImageIOBase");
  // Made lazily by the first pipeline update (ShouldIReleaseData), i.e. inside the first
  // Update/Write of every thread at once: ThreadSanitizer caught two threads inserting it into
  // SingletonIndex's map (ImageFileWriter::Update -> SetGlobalInstancePrivate).
  itk::DataObject::GetGlobalReleaseDataFlag();
}

}  // namespace

std::mutex& itk_header_mutex() {
  static std::mutex m;
  return m;
}

void init_itk_globals_once() {
  static std::once_flag once;
  std::call_once(once, init_itk_globals);
}

}  // namespace medseg::io
