// safetensors dtype names and sizes, and the small TensorEntry/SafetensorsHeader helpers.
#include <algorithm>
#include <array>
#include <sstream>
#include <utility>

#include "fp4gemm/io/safetensors.hpp"

namespace fp4gemm::io {
namespace {

struct DTypeInfo {
  TensorDType dtype;
  const char* name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 15> kDTypes = {{
    {TensorDType::boolean, "BOOL", 1}, {TensorDType::u8, "U8", 1},           {TensorDType::i8, "I8", 1},
    {TensorDType::u16, "U16", 2},      {TensorDType::i16, "I16", 2},         {TensorDType::u32, "U32", 4},
    {TensorDType::i32, "I32", 4},      {TensorDType::u64, "U64", 8},         {TensorDType::i64, "I64", 8},
    {TensorDType::f8_e4m3, "F8_E4M3", 1}, {TensorDType::f8_e5m2, "F8_E5M2", 1}, {TensorDType::f16, "F16", 2},
    {TensorDType::bf16, "BF16", 2},    {TensorDType::f32, "F32", 4},         {TensorDType::f64, "F64", 8},
}};

const DTypeInfo& info(TensorDType dtype) {
  for (const DTypeInfo& entry : kDTypes)
    if (entry.dtype == dtype) return entry;
  return kDTypes[1];  // unreachable: every enumerator is in the table
}

}  // namespace

const char* to_string(TensorDType dtype) { return info(dtype).name; }
std::size_t element_size(TensorDType dtype) { return info(dtype).size; }

std::optional<TensorDType> parse_tensor_dtype(std::string_view name) {
  for (const DTypeInfo& entry : kDTypes)
    if (name == entry.name) return entry.dtype;
  return std::nullopt;
}

std::int64_t TensorEntry::elements() const {
  std::int64_t count = 1;
  for (std::int64_t dimension : shape) count *= dimension;  // validated against overflow at parse time
  return count;
}

std::string TensorEntry::shape_string() const {
  std::ostringstream text;
  text << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text << (i ? ", " : "") << shape[i];
  text << "]";
  return text.str();
}

const TensorEntry* SafetensorsHeader::find(std::string_view name) const {
  const auto found = index_by_name.find(name);
  return found == index_by_name.end() ? nullptr : &tensors[found->second];
}

}  // namespace fp4gemm::io
