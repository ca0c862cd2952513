// libFuzzer target: the safetensors header/tensor-table parser on arbitrary bytes. Built only by
// scripts/fuzz.sh (clang++-14 -fsanitize=fuzzer,address,undefined), never by the CMake build.
//
// Beyond "no crash, no sanitizer report", it checks what the parser promises callers: a rejected
// input is Error(io); an accepted one has every tensor inside the data section, byte lengths equal
// to shape x dtype, no two non-empty tensors overlapping, and a name index that finds each tensor.
#include <cstdint>
#include <cstdlib>
#include <cstdio>

#include "fp4gemm/io/safetensors.hpp"

namespace {

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

void check_accepted(const fp4gemm::io::SafetensorsHeader& header, std::size_t size) {
  require(header.data_offset == 8 + header.header_bytes, "data offset is 8 + header length");
  require(header.data_offset <= size && header.data_bytes == size - header.data_offset, "data section inside the file");
  std::uint64_t previous_end = 0;
  for (const auto& entry : header.tensors) {
    require(entry.begin <= entry.end && entry.end <= header.data_bytes, "tensor inside the data section");
    std::uint64_t bytes = fp4gemm::io::element_size(entry.dtype);
    for (std::int64_t extent : entry.shape) {
      require(extent >= 0, "non-negative dimension");
      bytes *= std::uint64_t(extent);  // cannot overflow: the parser proved it fits the file
    }
    require(bytes == entry.byte_size(), "byte length equals shape x dtype");
    if (entry.byte_size() != 0) {
      require(entry.begin >= previous_end, "non-empty tensors do not overlap");
      previous_end = entry.end;
    }
    require(header.find(entry.name) == &entry, "the name index finds the tensor");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto header = fp4gemm::io::parse_safetensors_header(data, size, "fuzz-input");
    check_accepted(header, size);
  } catch (const fp4gemm::Error& error) {
    require(error.code() == fp4gemm::ErrorCode::io, "rejections are Error(io)");
  }
  return 0;
}
