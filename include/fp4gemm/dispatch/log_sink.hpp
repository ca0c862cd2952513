#pragma once
// Where a runner's warnings go (RunnerOptions::log): the one logging type the public API needs.
#include <functional>
#include <string>

namespace fp4gemm::dispatch {

enum class LogLevel { info, warning };

// Receives one complete sentence per call. Must be callable from any thread.
using LogSink = std::function<void(LogLevel level, const std::string& message)>;

}  // namespace fp4gemm::dispatch
