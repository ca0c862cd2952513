// torch.ops.fp4gemm: the schemas and the CPU/CUDA implementations of prepare, release, gemm (W4A16),
// gemm_out (gemm into a caller's tensor), gemm_nvfp4 (W4A4), quantize_weight, quantize_activation
// and host_cost_us (the library call's host time, to set the Python path's own cost against).
// Fake (meta) implementations live in Python (fp4gemm/_fake.py) so torch.compile traces them.
// gemm and gemm_out are also bound directly for eager callers (forward_ops.hpp, direct_bindings.cpp).
// Every library error reaches Python as a RuntimeError carrying the library's sentence.
#include <torch/library.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "fp4gemm/fp4gemm.hpp"
#include "forward_ops.hpp"
#include "weight_table.hpp"

#ifdef FP4GEMM_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace fp4gemm::torch_ops {
namespace {

std::int64_t prepare(const at::Tensor& weight, const at::Tensor& weight_scale, const at::Tensor& weight_scale_2) {
  if (weight_scale_2.numel() != 1) {
    throw_invalid("prepare: weight_scale_2 must hold one value, got " + std::to_string(weight_scale_2.numel()));
  }
  const float global_scale = weight_scale_2.to(at::kFloat).cpu().item<float>();  // at load: a sync is fine here
  return register_weight(weight, weight_scale, global_scale);
}

void release(std::int64_t weight_id) { release_weight(weight_id); }

void check_same_device(const at::Tensor& activation, const at::Tensor& weight, const char* op) {
  if (activation.device() != weight.device()) {
    throw_invalid(std::string(op) + ": the activation is on " + activation.device().str() + " but the weight on " +
                  weight.device().str() + "; prepare the weight on the activation's device");
  }
}

// A gemm bound to the runner for the activation's device and `backend`, the prepared weight, the
// output and the caller's current CUDA stream (whose device is current while it lives): what
// run_gemm calls once and host_cost_us many times. `out` [M, N] is allocated by the caller.
class BoundGemm {
 public:
  BoundGemm(const at::Tensor& weight, std::int64_t weight_id, const at::Tensor& out, c10::string_view backend,
            const Placement& placement, const char* out_name) {
#ifdef FP4GEMM_WITH_CUDA
    if (placement.memory == Memory::cuda) guard_.emplace(placement.device);  // first: the rest runs on that device
#endif
    context_ = context_for(placement);
    runner_ = &runner_for(placement, std::string(backend));
    handle_ = handle_for(weight_id, weight, *runner_);
    // Rows of `out` may be apart by more than N (a view into a wider buffer, gemm_out); one row's stride is moot.
    const std::int64_t out_stride = out.size(0) > 1 ? out.stride(0) : out.size(1);
    out_ = {out.data_ptr(), dtype_of(out.scalar_type(), out_name), out.size(0), out.size(1), out_stride, placement.memory,
            placement.device, 0};
  }
  void run(const ActivationView& a, double alpha) const { runner_->gemm(a, handle_, float(alpha), out_, context_); }

 private:
#ifdef FP4GEMM_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard_;
#endif
  RunContext context_;
  Runner* runner_ = nullptr;
  WeightHandle handle_;
  MutableDenseView out_;
};

// Runs out = alpha * a * w^T once (BoundGemm).
void run_gemm(const ActivationView& a, const at::Tensor& weight, std::int64_t weight_id, double alpha, const at::Tensor& out,
              c10::string_view backend, const Placement& placement) {
  BoundGemm(weight, weight_id, out, backend, placement, "out_dtype").run(a, alpha);
}

std::int64_t weight_rows(const at::Tensor& weight) { return weight.dim() == 2 ? weight.size(0) : 0; }

// A W4A16 activation [..., K] (float32 or bfloat16) as [M, K] rows and their view. A 2-D activation
// (the decode case) is used as it is: the reshape and view cost about a microsecond a call, a fifth
// of the op's own host time.
struct ActivationRows {
  at::Tensor rows;
  DenseView view;
  Placement placement;
};

ActivationRows activation_rows(const at::Tensor& activation, const at::Tensor& weight, const char* op) {
  if (activation.dim() < 1) throw_invalid(std::string(op) + ": the activation must have at least one dimension [..., K]");
  const DType a_type = dtype_of(activation.scalar_type(), (std::string(op) + ": the activation").c_str());
  check_same_device(activation, weight, op);
  const std::int64_t k = activation.size(-1);
  at::Tensor rows = activation.dim() == 2 ? activation : activation.reshape({-1, k});
  if (k > 0 && rows.stride(1) != 1) rows = rows.contiguous();
  const Placement placement = placement_of(activation);
  const DenseView view{rows.data_ptr(), a_type, rows.size(0), k, rows.size(0) > 1 ? rows.stride(0) : k, placement.memory,
                       placement.device, 0};
  return {rows, view, placement};
}

}  // namespace

// W4A16: activation [..., K] float32 or bfloat16.
at::Tensor gemm(const at::Tensor& activation, const at::Tensor& weight, std::int64_t weight_id, double alpha,
                std::optional<at::ScalarType> out_dtype, c10::string_view backend) {
  const ActivationRows a = activation_rows(activation, weight, "gemm");
  const at::ScalarType out_type = out_dtype.value_or(activation.scalar_type());
  dtype_of(out_type, "gemm: out_dtype");
  const std::int64_t n = weight_rows(weight);
  at::Tensor out = at::empty({a.rows.size(0), n}, activation.options().dtype(out_type));
  run_gemm(ActivationView::from_dense(a.view), weight, weight_id, alpha, out, backend, a.placement);
  if (activation.dim() == 2) return out;
  std::vector<std::int64_t> out_shape(activation.sizes().begin(), activation.sizes().end() - 1);
  out_shape.push_back(n);
  return out.view(out_shape);
}

// gemm into `out` [..., N] (the activation's leading dimensions; bfloat16, float16 or float32; its
// last dimension contiguous; rows of a 2-D out may be apart by more than N). It saves the output's
// allocation, which a caller that reuses one buffer (a CUDA graph, a decode loop) does not need.
void gemm_out(const at::Tensor& activation, const at::Tensor& weight, std::int64_t weight_id, double alpha, const at::Tensor& out,
              c10::string_view backend) {
  const ActivationRows a = activation_rows(activation, weight, "gemm_out");
  check_same_device(activation, out, "gemm_out");
  dtype_of(out.scalar_type(), "gemm_out: out");
  const std::int64_t n = weight_rows(weight);
  std::vector<std::int64_t> expected(activation.sizes().begin(), activation.sizes().end() - 1);
  expected.push_back(n);
  if (out.sizes() != at::IntArrayRef(expected)) {
    throw_invalid("gemm_out: out is " + shape_of(out) + " but the activation and weight give [" +
                  c10::Join(", ", expected) + "]");
  }
  if (n > 1 && out.stride(-1) != 1) throw_invalid("gemm_out: out's last dimension must be contiguous (stride 1)");
  if (out.dim() != 2 && !out.is_contiguous()) throw_invalid("gemm_out: an out of other than 2 dimensions must be contiguous");
  const at::Tensor rows = out.dim() == 2 ? out : out.view({-1, n});
  run_gemm(ActivationView::from_dense(a.view), weight, weight_id, alpha, rows, backend, a.placement);
}

namespace {

// The host time of the library call that gemm_out makes, without Python, the dispatcher or this
// binding: mean microseconds per runner.gemm over `calls` calls issued back to back after 20 untimed
// ones (on CUDA they queue on the current stream; nothing synchronises). A diagnostic: the Python
// path's own cost is gemm_out's host time minus this, measured in one process (the host's speed
// varies from machine to machine by more than the difference).
double host_cost_us(const at::Tensor& activation, const at::Tensor& weight, std::int64_t weight_id, double alpha,
                    const at::Tensor& out, c10::string_view backend, std::int64_t calls) {
  if (calls < 1) throw_invalid("host_cost_us: calls must be at least 1, got " + std::to_string(calls));
  if (activation.dim() != 2 || out.dim() != 2 || out.size(0) != activation.size(0) || out.size(1) != weight_rows(weight)) {
    throw_invalid("host_cost_us: takes a 2-D activation [M, K] and out [M, N], got " + shape_of(activation) + " and " + shape_of(out));
  }
  const ActivationRows a = activation_rows(activation, weight, "host_cost_us");
  check_same_device(activation, out, "host_cost_us");
  const BoundGemm gemm(weight, weight_id, out, backend, a.placement, "host_cost_us: out");
  const ActivationView view = ActivationView::from_dense(a.view);
  for (int i = 0; i < 20; ++i) gemm.run(view, alpha);
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < calls; ++i) gemm.run(view, alpha);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / double(calls);
}

// W4A4: the activation already NVFP4 (codes uint8 [M, K/2], E4M3 scales [M, K/16], linear layout,
// e.g. from quantize_activation); alpha = input_scale * weight_scale_2.
at::Tensor gemm_nvfp4(const at::Tensor& activation, const at::Tensor& activation_scale, const at::Tensor& weight,
                      std::int64_t weight_id, double alpha, std::optional<at::ScalarType> out_dtype,
                      c10::string_view backend) {
  const auto scale_type = activation_scale.scalar_type();
  if (activation.dim() != 2 || activation.scalar_type() != at::kByte || activation_scale.dim() != 2 ||
      (scale_type != at::kByte && scale_type != at::kFloat8_e4m3fn)) {
    throw_invalid("gemm_nvfp4: the activation must be uint8 codes [M, K/2] with float8_e4m3fn or uint8 block scales "
                  "[M, K/16]");
  }
  if (!activation.is_contiguous() || !activation_scale.is_contiguous()) {
    throw_invalid("gemm_nvfp4: the activation's codes and block scales must be contiguous");
  }
  check_same_device(activation, weight, "gemm_nvfp4");
  const at::ScalarType out_type = out_dtype.value_or(at::kBFloat16);
  dtype_of(out_type, "gemm_nvfp4: out_dtype");
  const Placement placement = placement_of(activation);
  Nvfp4View a;
  a.codes = static_cast<const std::uint8_t*>(activation.data_ptr());
  a.scales = static_cast<const std::uint8_t*>(activation_scale.data_ptr());
  a.rows = activation.size(0);
  a.cols = activation.size(1) * 2;
  a.memory = placement.memory;
  a.device = placement.device;
  a.codes_size_bytes = activation.numel();
  a.scales_size_bytes = activation_scale.numel();
  at::Tensor out = at::empty({a.rows, weight_rows(weight)}, activation.options().dtype(out_type));
  run_gemm(ActivationView::from_nvfp4(a), weight, weight_id, alpha, out, backend, placement);
  return out;
}

// The library's quantizers run on the host: a CUDA input is copied over (load-time work) and the
// result goes back to the input's device.
at::Tensor host_rows(const at::Tensor& values, const char* what) {
  if (values.dim() != 2) throw_invalid(std::string(what) + " must be 2-D [rows, cols]");
  dtype_of(values.scalar_type(), what);
  return values.to(at::kCPU).contiguous();
}

DenseView dense_view(const at::Tensor& host) {
  return {host.data_ptr(), dtype_of(host.scalar_type(), "values"), host.size(0), host.size(1), host.size(1), Memory::host, 0,
          host.numel() * std::int64_t(host.element_size())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> to_tensors(const Nvfp4Matrix& matrix, const at::Device& device) {
  const auto bytes = at::TensorOptions().dtype(at::kByte);
  at::Tensor codes = at::empty({matrix.rows, matrix.cols / 2}, bytes);
  at::Tensor scales = at::empty({matrix.rows, matrix.cols / 16}, bytes);
  std::memcpy(codes.data_ptr(), matrix.codes.data(), matrix.codes.size());
  std::memcpy(scales.data_ptr(), matrix.scales.data(), matrix.scales.size());
  at::Tensor global_scale = at::full({}, matrix.global_scale, at::TensorOptions().dtype(at::kFloat));
  return {codes.to(device), scales.view(at::kFloat8_e4m3fn).to(device), global_scale.to(device)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_weight(const at::Tensor& weight) {
  const at::Tensor host = host_rows(weight, "quantize_weight: the weight");
  return to_tensors(fp4gemm::quantize_weight(dense_view(host)), weight.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_activation(const at::Tensor& activation,
                                                                    std::optional<double> input_scale) {
  const at::Tensor host = host_rows(activation, "quantize_activation: the activation");
  const DenseView view = dense_view(host);
  const float scale = input_scale ? float(*input_scale) : activation_global_scale(view);
  return to_tensors(fp4gemm::quantize_activation(view, scale), activation.device());
}

}  // namespace

TORCH_LIBRARY(fp4gemm, m) {
  m.def("prepare(Tensor weight, Tensor weight_scale, Tensor weight_scale_2) -> int");
  m.def("release(int weight_id) -> ()", &release);
  m.def("gemm(Tensor activation, Tensor weight, int weight_id, float alpha, ScalarType? out_dtype=None, "
        "str backend=\"auto\") -> Tensor");
  m.def("gemm_out(Tensor activation, Tensor weight, int weight_id, float alpha, Tensor(a!) out, str backend=\"auto\") -> ()");
  m.def("gemm_nvfp4(Tensor activation, Tensor activation_scale, Tensor weight, int weight_id, float alpha, "
        "ScalarType? out_dtype=None, str backend=\"auto\") -> Tensor");
  m.def("quantize_weight(Tensor weight) -> (Tensor, Tensor, Tensor)");
  m.def("quantize_activation(Tensor activation, float? input_scale=None) -> (Tensor, Tensor, Tensor)");
  m.def("host_cost_us(Tensor activation, Tensor weight, int weight_id, float alpha, Tensor(a!) out, str backend, int calls) -> float");
  // prepare_moe, release_moe and moe: moe_ops.cpp; load_linear, info, explain: report_ops.cpp.
}

namespace {

// One implementation serves both keys: the runner picks the backend from where the tensors live.
void register_implementations(torch::Library& m) {
  m.impl("prepare", &prepare);
  m.impl("gemm", &gemm);
  m.impl("gemm_out", &gemm_out);
  m.impl("gemm_nvfp4", &gemm_nvfp4);
  m.impl("quantize_weight", &quantize_weight);
  m.impl("quantize_activation", &quantize_activation);
  m.impl("host_cost_us", &host_cost_us);
}

}  // namespace

TORCH_LIBRARY_IMPL(fp4gemm, CPU, m) { register_implementations(m); }
TORCH_LIBRARY_IMPL(fp4gemm, CUDA, m) { register_implementations(m); }

}  // namespace fp4gemm::torch_ops
