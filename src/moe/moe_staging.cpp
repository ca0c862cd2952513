#include "moe/moe_staging.hpp"

#include <memory>

#include "dispatch/staging.hpp"

namespace fp4gemm::moe {
namespace {

// `rows` rows of `row_bytes` at `source` (rows `source_pitch` bytes apart, in `source_memory`),
// copied packed into a new buffer in `memory`.
std::unique_ptr<dispatch::StagingBuffer> staged_rows(const void* source, std::size_t source_pitch, Memory source_memory,
                                                     std::size_t row_bytes, std::int64_t rows, Memory memory, int device,
                                                     void* stream) {
  auto staged = std::make_unique<dispatch::StagingBuffer>(memory, row_bytes * std::size_t(rows), device);
  dispatch::copy_rows(staged->data(), row_bytes, memory, source, source_pitch, source_memory, row_bytes, rows, device, stream);
  return staged;
}

}  // namespace

void run_moe_in_backend_memory(MoeBackend& backend, const PreparedMoe& prepared, const MoeCall& call,
                               const MutableDenseView& out, const RunContext& context, int device, bool carry_output) {
  const Memory memory = backend.memory();
  const bool routing_elsewhere = call.routing.topk_ids != nullptr && call.routing.memory != memory;
  if (call.x.memory == memory && out.memory == memory && !routing_elsewhere) {
    backend.run(call, prepared, out, context);
    return;
  }
  const std::int64_t tokens = call.x.rows;
  MoeCall staged_call = call;
  std::unique_ptr<dispatch::StagingBuffer> x, ids, weights, result;
  if (call.x.memory != memory) {
    const std::size_t element = dtype_size(call.x.dtype);
    x = staged_rows(call.x.data, std::size_t(call.x.stride()) * element, call.x.memory, std::size_t(call.x.cols) * element,
                    tokens, memory, device, context.cuda_stream);
    staged_call.x = {x->data(), call.x.dtype, tokens, call.x.cols, 0, memory, device};
  }
  if (routing_elsewhere) {
    const std::size_t entries = std::size_t(tokens) * std::size_t(call.options.top_k);
    ids = staged_rows(call.routing.topk_ids, entries * sizeof(std::int32_t), call.routing.memory,
                      entries * sizeof(std::int32_t), 1, memory, device, context.cuda_stream);
    weights = staged_rows(call.routing.topk_weights, entries * sizeof(float), call.routing.memory, entries * sizeof(float), 1,
                          memory, device, context.cuda_stream);
    staged_call.routing = {static_cast<const std::int32_t*>(ids->data()), static_cast<const float*>(weights->data()), memory,
                           device};
  }
  if (out.memory == memory) {
    backend.run(staged_call, prepared, out, context);
    return;
  }
  const std::size_t element = dtype_size(out.dtype), row_bytes = std::size_t(out.cols) * element;
  const std::size_t out_pitch = std::size_t(out.stride()) * element;
  if (carry_output) {
    result = staged_rows(out.data, out_pitch, out.memory, row_bytes, out.rows, memory, device, context.cuda_stream);
  } else {
    result = std::make_unique<dispatch::StagingBuffer>(memory, row_bytes * std::size_t(out.rows), device);
  }
  backend.run(staged_call, prepared, {result->data(), out.dtype, out.rows, out.cols, 0, memory, device}, context);
  dispatch::copy_rows(out.data, out_pitch, out.memory, result->data(), row_bytes, memory, row_bytes, out.rows, device,
                      context.cuda_stream);
}

}  // namespace fp4gemm::moe
