#pragma once
// GPU side of the backend tests: operands uploaded to the device, poisoned device outputs read
// back, and the skip that every GPU test starts with. (tests/support is also linked into the host
// test binary, so CUDA runtime calls live here instead.)
#include <cuda_runtime_api.h>

#include <optional>
#include <string>
#include <vector>

#include "backends/cuda_common/device_buffer.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::testing {

// The first CUDA device, or nothing (then cuda_unavailable_reason() says why).
std::optional<DeviceInfo> first_gpu();

// An NVFP4 matrix copied to the device; `view` points at the device copies.
struct DeviceNvfp4 {
  cuda::DeviceBuffer codes, scales;
  Nvfp4View view;
};
DeviceNvfp4 upload_nvfp4(const Nvfp4Matrix& matrix, int device);

// The activation of `operands` on the device. Dense rows get `row_stride` elements (0: K); the
// padding between rows is filled with NaN so a backend that reads it cannot pass.
struct DeviceActivation {
  cuda::DeviceBuffer dense;
  DeviceNvfp4 nvfp4;
  ActivationView view;
};
DeviceActivation upload_activation(const GemmOperands& operands, int device, std::int64_t row_stride = 0);

// A device output of [m, n] with `row_stride` elements per row (0: n), every byte set to 0xFF (NaN
// in every output type) plus a guard region after the last row, so unwritten elements and stray
// writes are both visible after download().
class DeviceOutput {
 public:
  DeviceOutput(std::int64_t m, std::int64_t n, DType dtype, int device, std::int64_t row_stride = 0);
  const MutableDenseView& view() const { return view_; }
  // Copies the device bytes back (synchronous); call after the backend's stream is synchronised.
  void download();
  // The [m, n] values as FP32, packed (strides removed).
  std::vector<float> values() const;
  // True when every byte outside the [m, n] elements (row padding, guard) is still 0xFF.
  bool only_elements_written() const;
  // True when no byte at all was written.
  bool untouched() const;

 private:
  cuda::DeviceBuffer buffer_;
  std::vector<std::uint8_t> host_;
  MutableDenseView view_;
};

// Sets an environment variable (a backend's tuning knob) for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// A non-blocking CUDA stream for the duration of a test.
class TestStream {
 public:
  TestStream();
  ~TestStream();
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  cudaStream_t get() const { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// Runs `c` on fresh operands and reports whether run() threw fp4gemm::Error and left every byte of
// the poisoned output untouched (what a refused configuration must do).
struct RefusedRun {
  bool threw = false;
  bool output_untouched = false;
};
RefusedRun run_expecting_refusal(Backend& backend, const DeviceInfo& gpu, const GemmCase& c, const TestStream& stream);

}  // namespace fp4gemm::testing
