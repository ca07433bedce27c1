#pragma once
#include <stdexcept>

namespace medseg {

template <class T>
T* Volume::data() {
  if (PixelTypeOf<T>::value != type_) throw std::logic_error("Volume::data: wrong pixel type");
  return reinterpret_cast<T*>(bytes_.data());
}
template <class T>
const T* Volume::data() const {
  if (PixelTypeOf<T>::value != type_) throw std::logic_error("Volume::data: wrong pixel type");
  return reinterpret_cast<const T*>(bytes_.data());
}

namespace detail {
template <class V, class F>
decltype(auto) visit_pixels_impl(V& v, F&& f) {
  switch (v.pixel_type()) {
    case PixelType::UInt8: return f(v.template data<uint8_t>());
    case PixelType::Int8: return f(v.template data<int8_t>());
    case PixelType::UInt16: return f(v.template data<uint16_t>());
    case PixelType::Int16: return f(v.template data<int16_t>());
    case PixelType::UInt32: return f(v.template data<uint32_t>());
    case PixelType::Int32: return f(v.template data<int32_t>());
    case PixelType::Int64: return f(v.template data<int64_t>());
    case PixelType::Float32: return f(v.template data<float>());
    case PixelType::Float64: return f(v.template data<double>());
  }
  throw std::logic_error("visit_pixels: unknown pixel type");
}
}  // namespace detail

template <class F>
decltype(auto) visit_pixels(Volume& v, F&& f) {
  return detail::visit_pixels_impl(v, std::forward<F>(f));
}
template <class F>
decltype(auto) visit_pixels(const Volume& v, F&& f) {
  return detail::visit_pixels_impl(v, std::forward<F>(f));
}

}  // namespace medseg
