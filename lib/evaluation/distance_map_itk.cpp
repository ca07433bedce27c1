#include <itkImage.h>
#include <itkSignedMaurerDistanceMapImageFilter.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "evaluation/distance_map.h"
#include "io/itk_globals.h"

namespace medseg::evaluation {

std::vector<float> distance_to_mask(const std::vector<uint8_t>& mask, const std::array<int64_t, 3>& shape,
                                    const std::array<double, 3>& spacing) {
  MEDSEG_CHECK(!std::none_of(mask.begin(), mask.end(), [](uint8_t v) { return v != 0; }),
               "distance_to_mask: empty mask");
  io::init_itk_globals_once();
  using MaskT = itk::Image<uint8_t, 3>;
  using DistT = itk::Image<float, 3>;
  auto img = MaskT::New();
  MaskT::SizeType size;
  MaskT::SpacingType sp;
  for (int a = 0; a < 3; ++a) {
    size[a] = static_cast<itk::SizeValueType>(shape[2 - a]);  // ITK index order is x, y, z
    sp[a] = spacing[2 - a];
  }
  img->SetRegions(MaskT::RegionType(size));
  img->SetSpacing(sp);
  img->Allocate();
  std::copy(mask.begin(), mask.end(), img->GetBufferPointer());
  auto f = itk::SignedMaurerDistanceMapImageFilter<MaskT, DistT>::New();
  f->SetInput(img);
  f->SetUseImageSpacing(true);
  f->SetSquaredDistance(false);
  f->SetInsideIsPositive(false);
  f->SetBackgroundValue(0);
  f->Update();
  const float* d = f->GetOutput()->GetBufferPointer();
  std::vector<float> out(mask.size());
  // Inside the mask the distance is zero by definition (Maurer reports depth there).
  for (size_t i = 0; i < out.size(); ++i) out[i] = mask[i] ? 0.0f : std::max(0.0f, d[i]);
  return out;
}

}  // namespace medseg::evaluation
