// cpu:0 for the library's own host work (folding constants, reading values back, checking a
// tuned kernel, the planned run's fallback), whether or not HAL_DEVICES shows it: the selector
// says which devices a program's work may use, and the host is always there to help. Before,
// HAL_DEVICES=cuda:* made load_onnx of a model with foldable constants fail ("cpu:0 is hidden").
#pragma once

#include "hal/device.hpp"

namespace hal::detail {

// NotFound only where the CPU backend itself did not load.
Device host_cpu();

}  // namespace hal::detail
