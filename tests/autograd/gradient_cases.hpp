// The gradient check cases (gradient_cases.cpp).
#pragma once

#include <vector>

#include "gradcheck.hpp"

namespace hal::test {

std::vector<GradCase> gradient_cases();

}  // namespace hal::test
