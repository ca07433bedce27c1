#pragma once
// A 3D image with its physical geometry. The library's common currency between stages.
//
// Axis conventions (docs/conventions.md):
//  * `shape` is in array order, slowest axis first: (z, y, x), which is the memory layout of the
//    voxel buffer, of ITK's buffer and of torch tensors. nnU-Net/SimpleITK arrays use the same order.
//  * `Geometry` is ITK's physical description: spacing and origin are (x, y, z), direction is the
//    3x3 row-major matrix whose columns are the x, y, z index axes in LPS world coordinates.
//  * Use `spacing_zyx()` when an array-order spacing is needed (fingerprints, plans).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace medseg {

enum class PixelType { UInt8, Int8, UInt16, Int16, UInt32, Int32, Int64, Float32, Float64 };

std::size_t pixel_size(PixelType t);
const char* pixel_type_name(PixelType t);
bool is_integer_type(PixelType t);

struct Geometry {
  std::array<double, 3> spacing{1.0, 1.0, 1.0};                // x, y, z (mm)
  std::array<double, 3> origin{0.0, 0.0, 0.0};                 // x, y, z (mm, LPS)
  std::array<double, 9> direction{1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major
  // Dimensions of the file the volume came from: 2 for a 2D image, held as one z slice whose
  // spacing is 999 x the largest in-plane spacing (nnU-Net's convention, so planners see a
  // thick axis) and written back as 2D. Not part of equality: it describes the file.
  int file_dimension = 3;

  std::array<double, 3> spacing_zyx() const { return {spacing[2], spacing[1], spacing[0]}; }
  // The z spacing a 2D file is given (see file_dimension).
  double slice_spacing_2d() const { return 999.0 * std::max(spacing[0], spacing[1]); }
  bool operator==(const Geometry& o) const {
    return spacing == o.spacing && origin == o.origin && direction == o.direction;
  }
};

// Describes how two geometries differ, or returns "" when they agree within tolerance
// (spacing relative 1e-4, origin absolute 1e-4 mm scaled by spacing, direction 1e-4).
std::string geometry_mismatch(const Geometry& a, const std::array<int64_t, 3>& shape_a, const Geometry& b,
                              const std::array<int64_t, 3>& shape_b);

std::string shape_str(const std::array<int64_t, 3>& s);

class Volume {
 public:
  Volume() = default;
  Volume(PixelType type, std::array<int64_t, 3> shape_zyx, Geometry geometry = {});

  PixelType pixel_type() const { return type_; }
  const std::array<int64_t, 3>& shape() const { return shape_; }
  int64_t numel() const { return shape_[0] * shape_[1] * shape_[2]; }
  const Geometry& geometry() const { return geometry_; }
  Geometry& geometry() { return geometry_; }

  void* raw() { return bytes_.data(); }
  const void* raw() const { return bytes_.data(); }
  std::size_t nbytes() const { return bytes_.size(); }

  // Typed access; throws if T does not match pixel_type().
  template <class T>
  T* data();
  template <class T>
  const T* data() const;

  // Voxel values converted to float/double (copies).
  std::vector<float> to_float() const;
  std::vector<double> to_double() const;
  double at(int64_t z, int64_t y, int64_t x) const;

  // Creates a volume of `type` from double values (rounded/cast per type).
  static Volume from_values(PixelType type, std::array<int64_t, 3> shape, const Geometry& g,
                            const std::vector<double>& values);
  static Volume from_float(std::array<int64_t, 3> shape, const Geometry& g, std::vector<float> values);

 private:
  PixelType type_ = PixelType::Float32;
  std::array<int64_t, 3> shape_{0, 0, 0};
  Geometry geometry_;
  std::vector<unsigned char> bytes_;
};

template <class T>
struct PixelTypeOf;
template <>
struct PixelTypeOf<uint8_t> {
  static constexpr PixelType value = PixelType::UInt8;
};
template <>
struct PixelTypeOf<int8_t> {
  static constexpr PixelType value = PixelType::Int8;
};
template <>
struct PixelTypeOf<uint16_t> {
  static constexpr PixelType value = PixelType::UInt16;
};
template <>
struct PixelTypeOf<int16_t> {
  static constexpr PixelType value = PixelType::Int16;
};
template <>
struct PixelTypeOf<uint32_t> {
  static constexpr PixelType value = PixelType::UInt32;
};
template <>
struct PixelTypeOf<int32_t> {
  static constexpr PixelType value = PixelType::Int32;
};
template <>
struct PixelTypeOf<int64_t> {
  static constexpr PixelType value = PixelType::Int64;
};
template <>
struct PixelTypeOf<float> {
  static constexpr PixelType value = PixelType::Float32;
};
template <>
struct PixelTypeOf<double> {
  static constexpr PixelType value = PixelType::Float64;
};

// Calls f(T* ptr) with the buffer cast to its real element type.
template <class F>
decltype(auto) visit_pixels(Volume& v, F&& f);
template <class F>
decltype(auto) visit_pixels(const Volume& v, F&& f);

}  // namespace medseg

#include "core/volume_inl.h"
