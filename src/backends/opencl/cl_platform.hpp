// One OpenCL platform (a vendor's driver) and the context hal makes over all its devices, so
// that buffers, events and copies move freely between devices of one platform.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/opencl/cl_api.hpp"

namespace hal::opencl {

struct ClPlatform {
  ClPlatform(std::shared_ptr<const ClApi> api_, cl_platform_id id_)
      : api(std::move(api_)), id(id_) {}
  ~ClPlatform() {
    if (context) api->clReleaseContext(context);
  }
  ClPlatform(const ClPlatform&) = delete;
  ClPlatform& operator=(const ClPlatform&) = delete;

  std::shared_ptr<const ClApi> api;
  cl_platform_id id;
  cl_context context = nullptr;
  std::string name;
  std::string vendor;
  std::string version;
};

// clGet*Info readers: a fixed-size value, a string, or an array.
template <class T, class Getter, class Object, class Param>
T info_value(Getter get, Object object, Param param, T fallback = T{}) {
  T value{};
  return get(object, param, sizeof(T), &value, nullptr) == CL_SUCCESS ? value : fallback;
}

template <class Getter, class Object, class Param>
std::string info_string(Getter get, Object object, Param param) {
  size_t size = 0;
  if (get(object, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  if (get(object, param, size, text.data(), nullptr) != CL_SUCCESS) return {};
  while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();
  return text;
}

template <class T, class Getter, class Object, class Param>
std::vector<T> info_array(Getter get, Object object, Param param) {
  size_t size = 0;
  if (get(object, param, 0, nullptr, &size) != CL_SUCCESS || size < sizeof(T)) return {};
  std::vector<T> values(size / sizeof(T));
  if (get(object, param, values.size() * sizeof(T), values.data(), nullptr) != CL_SUCCESS)
    return {};
  return values;
}

}  // namespace hal::opencl
