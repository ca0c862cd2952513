// The safetensors header parser. It sees untrusted bytes (a truncated download, a hostile file,
// the fuzzer), so every number is checked before it is used and every failure is Error(io) with a
// sentence naming the file and, where there is one, the tensor. It depends only on nlohmann-json
// so that scripts/fuzz.sh can build it alone.
#include <algorithm>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "fp4gemm/io/safetensors.hpp"

namespace fp4gemm::io {
namespace {

using nlohmann::json;

std::uint64_t read_le64(const std::uint8_t* bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw_io(file + ": " + what + "; the file is damaged or not a safetensors file: re-download or re-export it");
}

[[noreturn]] void fail_tensor(const std::string& file, const std::string& tensor, const std::string& what) {
  fail(file, "tensor '" + tensor + "' " + what);
}

// Refuses hostile nesting while parsing, before the tree is built (nlohmann recurses when it
// destroys a tree, so a megabyte of '[' must never become one).
json parse_json_bounded(const char* text, std::size_t length, const std::string& file) {
  const json::parser_callback_t depth_guard = [&file](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) fail(file, "the header JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return true;
  };
  try {
    return json::parse(text, text + length, depth_guard, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& error) {
    fail(file, std::string("the header is not valid JSON (") + error.what() + ")");
  }
}

std::uint64_t unsigned_field(const json& value, const std::string& file, const std::string& tensor, const char* what) {
  if (!value.is_number_unsigned()) fail_tensor(file, tensor, std::string("has a ") + what + " that is not a non-negative integer");
  return value.get<std::uint64_t>();
}

TensorEntry parse_entry(const std::string& name, const json& description, std::uint64_t data_bytes, const std::string& file) {
  if (!description.is_object()) fail_tensor(file, name, "is described by something other than a JSON object");
  TensorEntry entry;
  entry.name = name;

  const auto dtype_field = description.find("dtype");
  if (dtype_field == description.end() || !dtype_field->is_string()) fail_tensor(file, name, "has no \"dtype\" string");
  const std::string dtype_name = dtype_field->get<std::string>();
  const auto dtype = parse_tensor_dtype(dtype_name);
  if (!dtype) fail_tensor(file, name, "has unknown dtype '" + dtype_name.substr(0, 32) + "'");
  entry.dtype = *dtype;

  const auto shape_field = description.find("shape");
  if (shape_field == description.end() || !shape_field->is_array()) fail_tensor(file, name, "has no \"shape\" array");
  if (shape_field->size() > kMaxRank) fail_tensor(file, name, "has more than " + std::to_string(kMaxRank) + " dimensions");
  // NOTE: the element count and byte length are computed with overflow checks; a shape whose
  // product overflows cannot match any byte length a file can hold.
  std::uint64_t byte_length = element_size(entry.dtype);
  for (const json& dimension : *shape_field) {
    const std::uint64_t extent = unsigned_field(dimension, file, name, "shape dimension");
    if (extent > std::uint64_t(INT64_MAX) || (extent != 0 && byte_length > UINT64_MAX / extent)) {
      fail_tensor(file, name, "has a shape whose byte length overflows 64 bits");
    }
    byte_length *= extent;
    entry.shape.push_back(std::int64_t(extent));
  }

  const auto offsets_field = description.find("data_offsets");
  if (offsets_field == description.end() || !offsets_field->is_array() || offsets_field->size() != 2) {
    fail_tensor(file, name, "has no \"data_offsets\" pair [begin, end]");
  }
  entry.begin = unsigned_field((*offsets_field)[0], file, name, "data offset");
  entry.end = unsigned_field((*offsets_field)[1], file, name, "data offset");
  if (entry.end < entry.begin) fail_tensor(file, name, "has data_offsets whose end comes before its begin");
  if (entry.end > data_bytes) {
    fail_tensor(file, name, "has data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                                ") past the end of the data section (" + std::to_string(data_bytes) + " bytes)");
  }
  if (entry.byte_size() != byte_length) {
    fail_tensor(file, name, "holds " + std::to_string(entry.byte_size()) + " bytes but shape " + entry.shape_string() +
                                " x " + dtype_name + " needs " + std::to_string(byte_length));
  }
  return entry;
}

void parse_metadata(const json& metadata, SafetensorsHeader& header, const std::string& file) {
  if (!metadata.is_object()) fail(file, "\"__metadata__\" is not a JSON object");
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string()) fail(file, "metadata entry '" + key + "' is not a string");
    header.metadata[key] = value.get<std::string>();
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const std::uint8_t* bytes, std::uint64_t size, const std::string& file) {
  if (size < 8) fail(file, "is " + std::to_string(size) + " bytes long, too short for the 8-byte header length");
  SafetensorsHeader header;
  header.header_bytes = read_le64(bytes);
  if (header.header_bytes > kMaxHeaderBytes) {
    fail(file, "declares a header of " + std::to_string(header.header_bytes) + " bytes, above the limit of " +
                   std::to_string(kMaxHeaderBytes));
  }
  if (header.header_bytes > size - 8) {
    fail(file, "declares a header of " + std::to_string(header.header_bytes) + " bytes, past the end of the file (" +
                   std::to_string(size) + " bytes): it is truncated");
  }
  header.data_offset = 8 + header.header_bytes;
  header.data_bytes = size - header.data_offset;

  const char* text = reinterpret_cast<const char*>(bytes + 8);
  if (header.header_bytes == 0 || text[0] != '{') fail(file, "has a header that does not start with '{'");
  const json document = parse_json_bounded(text, std::size_t(header.header_bytes), file);
  if (!document.is_object()) fail(file, "has a header that is not a JSON object");

  for (const auto& [name, description] : document.items()) {
    if (name == "__metadata__") {
      parse_metadata(description, header, file);
      continue;
    }
    header.tensors.push_back(parse_entry(name, description, header.data_bytes, file));
  }

  // Overlap check on the tensors sorted by offset. Empty tensors occupy nothing and may share a
  // begin offset with anything.
  std::sort(header.tensors.begin(), header.tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& entry : header.tensors) {
    if (entry.byte_size() == 0) continue;
    if (previous != nullptr && entry.begin < previous->end) {
      fail_tensor(file, entry.name, "overlaps tensor '" + previous->name + "' (bytes [" + std::to_string(entry.begin) +
                                        ", " + std::to_string(entry.end) + ") and [" + std::to_string(previous->begin) +
                                        ", " + std::to_string(previous->end) + "))");
    }
    previous = &entry;
  }
  for (std::size_t i = 0; i < header.tensors.size(); ++i) header.index_by_name.emplace(header.tensors[i].name, i);
  return header;
}

}  // namespace fp4gemm::io
