// io/mask_contours.h on ITK's ContourExtractor2DImageFilter.
#include <itkContourExtractor2DImageFilter.h>
#include <itkImage.h>

#include "io/itk_globals.h"
#include "io/mask_contours.h"

namespace medseg::io {

bool mask_contours_available() { return true; }

std::vector<Contour> mask_contours(const uint8_t* mask, int64_t rows, int64_t columns) {
  init_itk_globals_once();
  using Image = itk::Image<float, 2>;
  auto image = Image::New();
  Image::SizeType size;
  size[0] = static_cast<itk::SizeValueType>(columns + 2);
  size[1] = static_cast<itk::SizeValueType>(rows + 2);
  image->SetRegions(Image::RegionType(size));
  image->Allocate();
  image->FillBuffer(0.0f);
  float* px = image->GetBufferPointer();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c) px[(r + 1) * (columns + 2) + (c + 1)] = mask[r * columns + c] ? 1.0f : 0.0f;
  auto filter = itk::ContourExtractor2DImageFilter<Image>::New();
  filter->SetInput(image);
  filter->SetContourValue(0.5);
  filter->VertexConnectHighPixelsOn();
  filter->SetNumberOfWorkUnits(1);
  filter->Update();
  std::vector<Contour> out;
  for (unsigned k = 0; k < filter->GetNumberOfIndexedOutputs(); ++k) {
    const auto* vertices = filter->GetOutput(k)->GetVertexList();
    Contour contour;
    for (unsigned i = 0; i < vertices->Size(); ++i) {
      const auto& v = vertices->ElementAt(i);
      contour.push_back({v[0] - 1.0, v[1] - 1.0});  // undo the padding
    }
    if (contour.size() > 1 && contour.front() == contour.back()) contour.pop_back();
    if (contour.size() >= 3) out.push_back(std::move(contour));
  }
  return out;
}

}  // namespace medseg::io
