// CLBlast, the OpenCL BLAS, read from libclblast.so.1 at run time the first time an OpenCL
// stream multiplies matrices: it links the OpenCL ICD loader, which hal itself only opens, so
// linking it would make hal need OpenCL to load.
#pragma once

#include "backends/opencl/cl_api.hpp"  // the OpenCL version hal targets, before clblast_c.h includes CL/cl.h

#include <clblast_c.h>

#include <memory>
#include <string>

namespace hal::opencl {

struct Clblast {
  decltype(&::CLBlastSgemm) sgemm = nullptr;
  decltype(&::CLBlastDgemm) dgemm = nullptr;

  // Opened once per process. Throws Unsupported naming the library when it cannot be opened
  // (matrix products are then what OpenCL devices lack, not OpenCL itself).
  static const Clblast& load();
};

// "CLBlastInvalidLeadDimA (-1012)" for the statuses hal's calls can meet, else the number.
std::string describe(CLBlastStatusCode status);

}  // namespace hal::opencl
