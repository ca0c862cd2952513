#pragma once
// One exception type crosses the public API. Its message is a full sentence saying what was wrong
// and what to do; `code` lets a future C API map it to a status without parsing text.
#include <stdexcept>
#include <string>

namespace fp4gemm {

enum class ErrorCode {
  invalid_argument,   // a shape, dtype, stride or value the caller passed is not acceptable
  unsupported,        // valid request, but this backend/device cannot serve it
  backend_failure,    // a backend failed while running (CUDA error, library status, ...)
  unrecoverable,      // the device context is broken (sticky CUDA error): restart the process
  io,                 // a file could not be read, written or parsed
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void throw_invalid(const std::string& message) {
  throw Error(ErrorCode::invalid_argument, message);
}

}  // namespace fp4gemm
