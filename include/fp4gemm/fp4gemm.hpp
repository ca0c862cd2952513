#pragma once
// Umbrella header of the fp4gemm library.
#include "fp4gemm/backend.hpp"
#include "fp4gemm/device.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/e4m3.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "fp4gemm/registry.hpp"
#include "fp4gemm/types.hpp"
