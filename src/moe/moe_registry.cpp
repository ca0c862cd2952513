// Every MoE backend compiled into this build. Order here is display order only; the `auto` order
// lives with the MoE runner (moe_preference.cpp).
#include "fp4gemm/moe/moe_runner.hpp"
#include "moe/cpu_moe_backend.hpp"
#include "moe/ref_moe_backend.hpp"
#ifdef FP4GEMM_WITH_CUDA
#include "moe/cuda_moe/cuda_moe_backend.hpp"
#endif

namespace fp4gemm::moe {

std::vector<std::shared_ptr<MoeBackend>> make_all_moe_backends() {
  std::vector<std::shared_ptr<MoeBackend>> backends;
  backends.push_back(std::make_shared<RefMoeBackend>());
  backends.push_back(std::make_shared<CpuMoeBackend>());
#ifdef FP4GEMM_WITH_CUDA
  // Constructing it touches no GPU: the list is built on GPU-less machines too.
  backends.push_back(std::make_shared<CudaMoeBackend>());
#endif
  return backends;
}

std::vector<std::string> moe_backend_names() {
  std::vector<std::string> names;
  for (const auto& backend : make_all_moe_backends()) names.push_back(backend->name());
  return names;
}

}  // namespace fp4gemm::moe
