// Writes safetensors files that the Python `safetensors` library and our own reader accept:
// offsets contiguous from 0, header padded with spaces to a multiple of 8.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "fp4gemm/io/safetensors.hpp"

namespace fp4gemm::io {
namespace {

std::uint64_t expected_bytes(TensorDType dtype, const std::vector<std::int64_t>& shape) {
  std::uint64_t count = element_size(dtype);
  for (std::int64_t extent : shape) count *= std::uint64_t(extent);
  return count;
}

void append_le64(std::vector<std::uint8_t>& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(std::uint8_t(value >> (8 * i)));
}

}  // namespace

void SafetensorsWriter::check_new(const std::string& name, TensorDType dtype, const std::vector<std::int64_t>& shape,
                                  std::size_t byte_count) const {
  if (name.empty() || name == "__metadata__") throw_invalid("safetensors writer: '" + name + "' cannot name a tensor");
  for (const auto& pending : tensors_)
    if (pending->name == name) throw_invalid("safetensors writer: tensor '" + name + "' was added twice");
  for (std::int64_t extent : shape)
    if (extent < 0) throw_invalid("safetensors writer: tensor '" + name + "' has a negative dimension");
  if (expected_bytes(dtype, shape) != byte_count) {
    throw_invalid("safetensors writer: tensor '" + name + "' has " + std::to_string(byte_count) +
                  " bytes, but its shape and dtype need " + std::to_string(expected_bytes(dtype, shape)));
  }
}

void SafetensorsWriter::add(const std::string& name, TensorDType dtype, std::vector<std::int64_t> shape,
                            std::span<const std::uint8_t> bytes) {
  check_new(name, dtype, shape, bytes.size());
  auto pending = std::make_unique<Pending>(Pending{name, dtype, std::move(shape), {bytes.begin(), bytes.end()}, {}});
  pending->bytes = pending->owned;
  tensors_.push_back(std::move(pending));
}

void SafetensorsWriter::add_borrowed(const std::string& name, TensorDType dtype, std::vector<std::int64_t> shape,
                                     std::span<const std::uint8_t> bytes) {
  check_new(name, dtype, shape, bytes.size());
  tensors_.push_back(std::make_unique<Pending>(Pending{name, dtype, std::move(shape), {}, bytes}));
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

std::string SafetensorsWriter::header_json() const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  std::uint64_t offset = 0;
  for (const auto& pending : tensors_) {
    const std::uint64_t end = offset + pending->bytes.size();
    header[pending->name] = {{"dtype", to_string(pending->dtype)}, {"shape", pending->shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  // NOTE: padding keeps the data section 8-byte aligned for readers that map it and cast.
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

std::vector<std::uint8_t> SafetensorsWriter::serialize() const {
  const std::string header = header_json();
  std::vector<std::uint8_t> out;
  append_le64(out, header.size());
  out.insert(out.end(), header.begin(), header.end());
  for (const auto& pending : tensors_) out.insert(out.end(), pending->bytes.begin(), pending->bytes.end());
  return out;
}

void SafetensorsWriter::write(const std::string& path) const {
  const std::string header = header_json();
  std::vector<std::uint8_t> prefix;
  append_le64(prefix, header.size());
  prefix.insert(prefix.end(), header.begin(), header.end());

  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  std::FILE* out = std::fopen(temporary.c_str(), "wb");
  if (out == nullptr) throw_io("cannot create '" + temporary + "': " + std::strerror(errno) + "; check the output directory");
  bool ok = std::fwrite(prefix.data(), 1, prefix.size(), out) == prefix.size();
  for (const auto& pending : tensors_) {
    if (!ok) break;
    if (pending->bytes.empty()) continue;  // an empty span may hold a null pointer
    ok = std::fwrite(pending->bytes.data(), 1, pending->bytes.size(), out) == pending->bytes.size();
  }
  const int saved_errno = errno;
  ok = (std::fclose(out) == 0) && ok;
  if (!ok) {
    std::remove(temporary.c_str());
    throw_io("cannot write '" + path + "': " + std::strerror(saved_errno) + "; check free disk space");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw_io("cannot move the written file into place at '" + path + "': " + reason);
  }
}

}  // namespace fp4gemm::io
