#pragma once
// The CUDA backends compiled into this build (only when FP4GEMM_WITH_CUDA is defined); the
// registry appends them after the host backends.
#include <memory>
#include <vector>

#include "fp4gemm/backend.hpp"

namespace fp4gemm {

std::vector<std::unique_ptr<Backend>> make_cuda_backends();

}  // namespace fp4gemm
