#include "core/volume.h"

#include <cmath>
#include <sstream>

namespace medseg {

std::size_t pixel_size(PixelType t) {
  switch (t) {
    case PixelType::UInt8:
    case PixelType::Int8: return 1;
    case PixelType::UInt16:
    case PixelType::Int16: return 2;
    case PixelType::UInt32:
    case PixelType::Int32:
    case PixelType::Float32: return 4;
    case PixelType::Int64:
    case PixelType::Float64: return 8;
  }
  return 0;
}

const char* pixel_type_name(PixelType t) {
  switch (t) {
    case PixelType::UInt8: return "uint8";
    case PixelType::Int8: return "int8";
    case PixelType::UInt16: return "uint16";
    case PixelType::Int16: return "int16";
    case PixelType::UInt32: return "uint32";
    case PixelType::Int32: return "int32";
    case PixelType::Int64: return "int64";
    case PixelType::Float32: return "float32";
    case PixelType::Float64: return "float64";
  }
  return "?";
}

bool is_integer_type(PixelType t) { return t != PixelType::Float32 && t != PixelType::Float64; }

std::string shape_str(const std::array<int64_t, 3>& s) {
  std::ostringstream o;
  o << s[0] << "x" << s[1] << "x" << s[2];
  return o.str();
}

std::string geometry_mismatch(const Geometry& a, const std::array<int64_t, 3>& shape_a, const Geometry& b,
                              const std::array<int64_t, 3>& shape_b) {
  std::ostringstream o;
  if (a.file_dimension != b.file_dimension) {
    o << "a " << a.file_dimension << "D file vs a " << b.file_dimension << "D file";
    return o.str();
  }
  if (shape_a != shape_b) {
    o << "shape " << shape_str(shape_a) << " vs " << shape_str(shape_b) << " (z,y,x)";
    return o.str();
  }
  for (int i = 0; i < 3; ++i) {
    double ref = std::max(std::abs(a.spacing[i]), std::abs(b.spacing[i]));
    if (std::abs(a.spacing[i] - b.spacing[i]) > 1e-4 * ref) {
      o << "spacing (" << a.spacing[0] << "," << a.spacing[1] << "," << a.spacing[2] << ") vs (" << b.spacing[0] << ","
        << b.spacing[1] << "," << b.spacing[2] << ")";
      return o.str();
    }
  }
  for (int i = 0; i < 3; ++i) {
    double tol = 1e-4 * std::max(1.0, std::abs(a.spacing[i]));
    if (std::abs(a.origin[i] - b.origin[i]) > tol) {
      o << "origin (" << a.origin[0] << "," << a.origin[1] << "," << a.origin[2] << ") vs (" << b.origin[0] << ","
        << b.origin[1] << "," << b.origin[2] << ")";
      return o.str();
    }
  }
  for (int i = 0; i < 9; ++i) {
    if (std::abs(a.direction[i] - b.direction[i]) > 1e-4) {
      o << "direction matrices differ (element " << i << ": " << a.direction[i] << " vs " << b.direction[i] << ")";
      return o.str();
    }
  }
  return "";
}

Volume::Volume(PixelType type, std::array<int64_t, 3> shape_zyx, Geometry geometry)
    : type_(type), shape_(shape_zyx), geometry_(geometry) {
  for (auto s : shape_)
    if (s < 0) throw std::invalid_argument("Volume: negative shape");
  bytes_.assign(static_cast<std::size_t>(numel()) * pixel_size(type), 0);
}

std::vector<float> Volume::to_float() const {
  std::vector<float> out(static_cast<std::size_t>(numel()));
  visit_pixels(*this, [&](const auto* p) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(p[i]);
  });
  return out;
}

std::vector<double> Volume::to_double() const {
  std::vector<double> out(static_cast<std::size_t>(numel()));
  visit_pixels(*this, [&](const auto* p) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

double Volume::at(int64_t z, int64_t y, int64_t x) const {
  const int64_t i = (z * shape_[1] + y) * shape_[2] + x;
  return visit_pixels(*this, [&](const auto* p) { return static_cast<double>(p[i]); });
}

Volume Volume::from_values(PixelType type, std::array<int64_t, 3> shape, const Geometry& g,
                           const std::vector<double>& values) {
  Volume v(type, shape, g);
  if (static_cast<int64_t>(values.size()) != v.numel())
    throw std::invalid_argument("Volume::from_values: size does not match shape");
  visit_pixels(v, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_integral_v<T>)
        p[i] = static_cast<T>(std::llround(values[i]));
      else
        p[i] = static_cast<T>(values[i]);
    }
  });
  return v;
}

Volume Volume::from_float(std::array<int64_t, 3> shape, const Geometry& g, std::vector<float> values) {
  Volume v(PixelType::Float32, shape, g);
  if (static_cast<int64_t>(values.size()) != v.numel())
    throw std::invalid_argument("Volume::from_float: size does not match shape");
  std::copy(values.begin(), values.end(), v.data<float>());
  return v;
}

}  // namespace medseg
