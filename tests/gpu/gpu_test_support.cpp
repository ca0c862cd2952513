#include "gpu/gpu_test_support.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backends/cuda_common/cuda_check.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/half.hpp"

namespace fp4gemm::testing {
namespace {

constexpr std::size_t kGuardBytes = 256;

// NaN in the activation's own type, for the padding between strided rows.
template <class T>
std::vector<T> padded_rows(const std::vector<T>& packed, std::int64_t rows, std::int64_t cols, std::int64_t stride, T nan) {
  std::vector<T> out(static_cast<std::size_t>(rows * stride), nan);
  for (std::int64_t row = 0; row < rows; ++row)
    std::memcpy(out.data() + row * stride, packed.data() + row * cols, std::size_t(cols) * sizeof(T));
  return out;
}

}  // namespace

std::optional<DeviceInfo> first_gpu() {
  const auto devices = probe_cuda_devices();
  if (devices.empty()) return std::nullopt;
  return devices.front();
}

DeviceNvfp4 upload_nvfp4(const Nvfp4Matrix& matrix, int device) {
  DeviceNvfp4 uploaded;
  uploaded.codes = cuda::upload(matrix.codes.data(), matrix.codes.size(), "test NVFP4 codes");
  uploaded.scales = cuda::upload(matrix.scales.data(), matrix.scales.size(), "test NVFP4 scales");
  uploaded.view = matrix.view();
  uploaded.view.codes = uploaded.codes.as<const std::uint8_t>();
  uploaded.view.scales = uploaded.scales.as<const std::uint8_t>();
  uploaded.view.memory = Memory::cuda;
  uploaded.view.device = device;
  return uploaded;
}

DeviceActivation upload_activation(const GemmOperands& operands, int device, std::int64_t row_stride) {
  DeviceActivation activation;
  const std::int64_t m = operands.m, k = operands.k, stride = row_stride == 0 ? k : row_stride;
  switch (operands.type) {
    case ActivationType::nvfp4:
      activation.nvfp4 = upload_nvfp4(operands.activation_nvfp4, device);
      activation.view = ActivationView::from_nvfp4(activation.nvfp4.view);
      return activation;
    case ActivationType::bf16: {
      const auto rows = padded_rows<std::uint16_t>(operands.activation_bf16, m, k, stride, 0x7FC0);
      activation.dense = cuda::upload(rows.data(), rows.size() * 2, "test BF16 activations");
      activation.view = ActivationView::from_dense({activation.dense.data(), DType::bf16, m, k, stride, Memory::cuda, device});
      return activation;
    }
    case ActivationType::f32: {
      const auto rows = padded_rows<float>(operands.activation_f32, m, k, stride, NAN);
      activation.dense = cuda::upload(rows.data(), rows.size() * 4, "test FP32 activations");
      activation.view = ActivationView::from_dense({activation.dense.data(), DType::f32, m, k, stride, Memory::cuda, device});
      return activation;
    }
  }
  return activation;
}

DeviceOutput::DeviceOutput(std::int64_t m, std::int64_t n, DType dtype, int device, std::int64_t row_stride) {
  const std::int64_t stride = row_stride == 0 ? n : row_stride;
  host_.assign(static_cast<std::size_t>(m * stride) * dtype_size(dtype) + kGuardBytes, 0xFF);
  buffer_ = cuda::upload(host_.data(), host_.size(), "the poisoned test output");
  view_ = {buffer_.data(), dtype, m, n, row_stride, Memory::cuda, device};
}

void DeviceOutput::download() {
  cuda::check_cuda(cudaMemcpy(host_.data(), buffer_.data(), host_.size(), cudaMemcpyDeviceToHost),
                   "downloading the test output");
}

std::vector<float> DeviceOutput::values() const {
  std::vector<float> values(static_cast<std::size_t>(view_.rows * view_.cols));
  const std::size_t element = dtype_size(view_.dtype);
  for (std::int64_t row = 0; row < view_.rows; ++row) {
    for (std::int64_t col = 0; col < view_.cols; ++col) {
      const std::uint8_t* bytes = host_.data() + std::size_t(row * view_.stride() + col) * element;
      float value = NAN;
      std::uint16_t bits = 0;
      switch (view_.dtype) {
        case DType::f32: std::memcpy(&value, bytes, 4); break;
        case DType::bf16: std::memcpy(&bits, bytes, 2); value = bf16_to_float(bits); break;
        case DType::f16: std::memcpy(&bits, bytes, 2); value = fp16_to_float(bits); break;
      }
      values[std::size_t(row * view_.cols + col)] = value;
    }
  }
  return values;
}

bool DeviceOutput::only_elements_written() const {
  const std::size_t element = dtype_size(view_.dtype);
  for (std::size_t byte = 0; byte < host_.size(); ++byte) {
    const std::int64_t index = std::int64_t(byte / element);
    const bool inside = index < view_.rows * view_.stride() && index % view_.stride() < view_.cols;
    if (!inside && host_[byte] != 0xFF) return false;
  }
  return true;
}

bool DeviceOutput::untouched() const {
  for (std::uint8_t byte : host_)
    if (byte != 0xFF) return false;
  return true;
}

TestStream::TestStream() {
  cuda::check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a test stream");
}
TestStream::~TestStream() { cudaStreamDestroy(stream_); }
void TestStream::synchronize() const { cuda::check_cuda(cudaStreamSynchronize(stream_), "waiting for the backend's work"); }

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
ScopedEnv::~ScopedEnv() { unsetenv(name_); }

RefusedRun run_expecting_refusal(Backend& backend, const DeviceInfo& gpu, const GemmCase& c, const TestStream& stream) {
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(c, rng);
  const auto prepared = backend.prepare(operands.weight.view(), gpu);
  const DeviceActivation activation = upload_activation(operands, gpu.index);
  DeviceOutput out(c.m, c.n, c.output, gpu.index);
  RefusedRun result;
  try {
    backend.run(activation.view, *prepared, operands.alpha, out.view(), {stream.get()});
  } catch (const Error&) {
    result.threw = true;
  }
  stream.synchronize();
  out.download();
  result.output_untouched = out.untouched();
  return result;
}

}  // namespace fp4gemm::testing
