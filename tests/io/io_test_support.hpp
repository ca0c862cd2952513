#pragma once
// Helpers for the io tests: a scratch directory removed on exit, raw file writing, and a check
// that a call fails with Error(io) whose message names what it should.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fp4gemm/error.hpp"

namespace fp4gemm::io::testing {

class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() / ("fp4gemm_io_test_" + std::to_string(entropy()) + std::to_string(entropy()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Normally distributed floats from a fixed seed, and their F32 bytes, for test tensors.
inline std::vector<float> random_floats(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& value : values) value = normal(rng);
  return values;
}

inline std::vector<std::uint8_t> as_f32_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A safetensors file from a literal header and `data_bytes` bytes of data (no padding, no checks),
// for building malformed files.
inline std::vector<std::uint8_t> raw_safetensors(const std::string& header, std::size_t data_bytes,
                                                 std::uint64_t declared_length = UINT64_MAX) {
  const std::uint64_t length = declared_length == UINT64_MAX ? header.size() : declared_length;
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(std::uint8_t(length >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (std::size_t i = 0; i < data_bytes; ++i) bytes.push_back(std::uint8_t(i * 7));
  return bytes;
}

// Runs `call`; passes when it throws Error(io) whose message contains every one of `needles`.
inline ::testing::AssertionResult fails_with_io_error(const std::function<void()>& call,
                                                      const std::vector<std::string>& needles) {
  try {
    call();
  } catch (const Error& error) {
    if (error.code() != ErrorCode::io) return ::testing::AssertionFailure() << "wrong error code: " << error.what();
    const std::string message = error.what();
    for (const std::string& needle : needles)
      if (message.find(needle) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << needle << "': " << message;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& error) {
    return ::testing::AssertionFailure() << "not an fp4gemm::Error: " << error.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace fp4gemm::io::testing
