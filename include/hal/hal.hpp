// Everything in hal's public C++ API.
#pragma once

#include "hal/allocator.hpp"
#include "hal/buffer.hpp"
#include "hal/device.hpp"
#include "hal/device_info.hpp"
#include "hal/dtype.hpp"
#include "hal/error.hpp"
#include "hal/event.hpp"
#include "hal/graph.hpp"
#include "hal/kernel.hpp"
#include "hal/log.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "hal/selector.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"
#include "hal/version.hpp"
