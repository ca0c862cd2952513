// run_with_staging: run a backend on operands that live in the other memory.
// NOTE: staging costs two copies of the activation/output per call (PCIe or NVLink-C2C speed);
// it exists so a failing GPU backend can fall back to a host one with a correct result, not as
// a fast path. `explain` and the fallback warning say when it happens.
#include <memory>

#include "dispatch/staging.hpp"

namespace fp4gemm::dispatch {
namespace {

struct StagedActivation {
  std::unique_ptr<StagingBuffer> values;  // dense data or NVFP4 codes
  std::unique_ptr<StagingBuffer> scales;  // NVFP4 block scales
  ActivationView view;
};

StagedActivation stage_activation(const ActivationView& a, Memory target, int device, void* stream) {
  StagedActivation staged;
  staged.view = a;
  if (a.type != ActivationType::nvfp4) {
    const std::size_t row_bytes = std::size_t(a.dense.cols) * dtype_size(a.dense.dtype);
    staged.values = std::make_unique<StagingBuffer>(target, row_bytes * std::size_t(a.dense.rows), device);
    copy_rows(staged.values->data(), row_bytes, target, a.dense.data, std::size_t(a.dense.stride()) * dtype_size(a.dense.dtype),
              a.dense.memory, row_bytes, a.dense.rows, device, stream);
    staged.view.dense.data = staged.values->data();
    staged.view.dense.row_stride = 0;
    staged.view.dense.memory = target;
    staged.view.dense.device = device;
    return staged;
  }
  // NVFP4 views are dense: codes [rows, cols/2], scales scale_bytes() in their layout.
  const std::size_t code_bytes = std::size_t(a.nvfp4.code_bytes());
  const std::size_t scale_bytes = std::size_t(a.nvfp4.scale_bytes());
  staged.values = std::make_unique<StagingBuffer>(target, code_bytes, device);
  staged.scales = std::make_unique<StagingBuffer>(target, scale_bytes, device);
  copy_rows(staged.values->data(), code_bytes, target, a.nvfp4.codes, code_bytes, a.nvfp4.memory, code_bytes, 1, device, stream);
  copy_rows(staged.scales->data(), scale_bytes, target, a.nvfp4.scales, scale_bytes, a.nvfp4.memory, scale_bytes, 1, device,
            stream);
  staged.view.nvfp4.codes = static_cast<const std::uint8_t*>(staged.values->data());
  staged.view.nvfp4.scales = static_cast<const std::uint8_t*>(staged.scales->data());
  staged.view.nvfp4.memory = target;
  staged.view.nvfp4.device = device;
  return staged;
}

}  // namespace

void run_with_staging(Backend& backend, const ActivationView& a, const PreparedWeight& weight, float alpha,
                      const MutableDenseView& out, const RunContext& context, int device) {
  const Memory target = backend.memory();
  if (a.memory() == target && out.memory == target) {
    backend.run(a, weight, alpha, out, context);
    return;
  }
  // GPU backends run on the caller's stream; host backends wait for it inside copy_rows.
  void* stream = context.cuda_stream;
  const StagedActivation staged = a.memory() == target ? StagedActivation{nullptr, nullptr, a}
                                                       : stage_activation(a, target, device, stream);
  const std::size_t row_bytes = std::size_t(out.cols) * dtype_size(out.dtype);
  StagingBuffer scratch(target, row_bytes * std::size_t(out.rows), device);
  MutableDenseView scratch_view{scratch.data(), out.dtype, out.rows, out.cols, 0, target, device};
  backend.run(staged.view, weight, alpha, scratch_view, context);
  copy_rows(out.data, std::size_t(out.stride()) * dtype_size(out.dtype), out.memory, scratch.data(), row_bytes, target,
            row_bytes, out.rows, device, stream);
}

}  // namespace fp4gemm::dispatch
