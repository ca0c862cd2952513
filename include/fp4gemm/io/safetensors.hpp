#pragma once
// safetensors files: the header/tensor-table parser (validates everything before any byte of
// tensor data is trusted), a memory-mapped reader with zero-copy views, and a writer.
//
// Layout of a file: 8 bytes little-endian N, then N bytes of JSON
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
// then the data section; data_offsets are [begin, end) relative to the data section.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fp4gemm/error.hpp"

namespace fp4gemm::io {

// Every failure to read, parse or write a file: ErrorCode::io with a sentence naming the file.
[[noreturn]] inline void throw_io(const std::string& message) { throw Error(ErrorCode::io, message); }

// The element types safetensors defines, by their file names (BOOL, U8, ..., F8_E4M3, BF16, F64).
enum class TensorDType { boolean, u8, i8, u16, i16, u32, i32, u64, i64, f8_e4m3, f8_e5m2, f16, bf16, f32, f64 };

const char* to_string(TensorDType dtype);  // the name used in files: "F8_E4M3", "BF16", ...
std::optional<TensorDType> parse_tensor_dtype(std::string_view name);
std::size_t element_size(TensorDType dtype);

// The header bounds the reader accepts. NOTE: the JSON is small (about 100 bytes per tensor);
// 100 MiB matches the reference implementation's limit and keeps a hostile length from making
// us allocate gigabytes. Nesting deeper than kMaxJsonDepth is never legitimate (ours is 3).
inline constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;
inline constexpr int kMaxJsonDepth = 8;
inline constexpr std::size_t kMaxRank = 16;

struct TensorEntry {
  std::string name;
  TensorDType dtype = TensorDType::u8;
  std::vector<std::int64_t> shape;  // [] is a scalar
  std::uint64_t begin = 0;          // [begin, end) within the data section
  std::uint64_t end = 0;

  std::int64_t elements() const;
  std::uint64_t byte_size() const { return end - begin; }
  std::string shape_string() const;  // "[4096, 2048]"
};

struct SafetensorsHeader {
  std::uint64_t header_bytes = 0;  // N, the JSON length
  std::uint64_t data_offset = 0;   // 8 + N: where the data section starts in the file
  std::uint64_t data_bytes = 0;    // file size - data_offset
  std::vector<TensorEntry> tensors;  // sorted by begin offset
  std::map<std::string, std::string> metadata;
  std::map<std::string, std::size_t, std::less<>> index_by_name;  // name -> position in `tensors`

  const TensorEntry* find(std::string_view name) const;
};

// Parses and validates a whole file's bytes (only the header is read; the data section is bounds-
// checked against `size`): header length within the file and kMaxHeaderBytes, JSON syntax and
// structure, known dtypes, shape x dtype = byte length, offsets within the data section and not
// overlapping. Throws Error(io) naming `file` (and the tensor) on the first problem.
SafetensorsHeader parse_safetensors_header(const std::uint8_t* bytes, std::uint64_t size, const std::string& file);

// A zero-copy view of one tensor's bytes inside a mapped file. Valid while the file lives.
// NOTE: data is only guaranteed 1-byte aligned (the header length is arbitrary); copy with memcpy.
struct TensorView {
  const TensorEntry* entry = nullptr;
  const std::uint8_t* data = nullptr;
  const std::string* file = nullptr;  // the path, for error messages

  const std::string& name() const { return entry->name; }
  TensorDType dtype() const { return entry->dtype; }
  const std::vector<std::int64_t>& shape() const { return entry->shape; }
  std::span<const std::uint8_t> bytes() const { return {data, std::size_t(entry->byte_size())}; }
};

// A safetensors file mapped read-only. Move-only; views point into the mapping.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  const std::string& path() const { return *path_; }
  const SafetensorsHeader& header() const { return header_; }
  const std::vector<TensorEntry>& tensors() const { return header_.tensors; }
  std::uint64_t file_size() const { return size_; }

  std::optional<TensorView> find(std::string_view name) const;
  TensorView get(std::string_view name) const;  // throws Error(io) naming the file when absent
  TensorView view(const TensorEntry& entry) const;

 private:
  SafetensorsFile() = default;
  std::unique_ptr<std::string> path_;  // stable address for TensorView::file across moves
  const std::uint8_t* mapping_ = nullptr;
  std::uint64_t size_ = 0;
  SafetensorsHeader header_;
};

// Collects tensors and writes one file: header keys in JSON order, data in insertion order, the
// header padded with spaces to a multiple of 8 so the data section is 8-byte aligned.
class SafetensorsWriter {
 public:
  // Copies `bytes`. The byte count must equal shape x dtype; names must be unique and not
  // "__metadata__". Throws Error(invalid_argument) otherwise.
  void add(const std::string& name, TensorDType dtype, std::vector<std::int64_t> shape,
           std::span<const std::uint8_t> bytes);
  // Like add() without the copy: `bytes` must stay valid until write() returns.
  void add_borrowed(const std::string& name, TensorDType dtype, std::vector<std::int64_t> shape,
                    std::span<const std::uint8_t> bytes);
  void set_metadata(const std::string& key, const std::string& value);
  std::size_t size() const { return tensors_.size(); }

  // Writes `path` through a temporary file renamed into place, so a failed write leaves no
  // half-written file behind. Throws Error(io) naming the path.
  void write(const std::string& path) const;
  // The whole file as bytes (tests and small outputs).
  std::vector<std::uint8_t> serialize() const;

 private:
  struct Pending {
    std::string name;
    TensorDType dtype;
    std::vector<std::int64_t> shape;
    std::vector<std::uint8_t> owned;
    std::span<const std::uint8_t> bytes;
  };
  std::string header_json() const;
  void check_new(const std::string& name, TensorDType dtype, const std::vector<std::int64_t>& shape,
                 std::size_t byte_count) const;
  std::vector<std::unique_ptr<Pending>> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace fp4gemm::io
