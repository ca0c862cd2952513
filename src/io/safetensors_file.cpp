// A safetensors file mapped read-only: the header is validated once at open, then tensor views
// point straight into the mapping (no copy; the kernel pages data in as it is touched).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fp4gemm/io/safetensors.hpp"

namespace fp4gemm::io {
namespace {

std::string system_error(const std::string& action, const std::string& path) {
  return "cannot " + action + " '" + path + "': " + std::strerror(errno);
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile file;
  file.path_ = std::make_unique<std::string>(path);
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) throw_io(system_error("open", path) + "; check the path");
  struct stat status {};
  if (::fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(descriptor);
    throw_io("'" + path + "' is not a regular file; pass a .safetensors file");
  }
  file.size_ = std::uint64_t(status.st_size);
  if (file.size_ < 8) {
    ::close(descriptor);
    parse_safetensors_header(nullptr, file.size_, path);  // throws the "too short" error
  }
  void* mapping = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, descriptor, 0);
  ::close(descriptor);  // the mapping keeps the file alive
  if (mapping == MAP_FAILED) throw_io(system_error("memory-map", path));
  file.mapping_ = static_cast<const std::uint8_t*>(mapping);
  // On failure the destructor of `file` unmaps.
  file.header_ = parse_safetensors_header(file.mapping_, file.size_, path);
  return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)), mapping_(other.mapping_), size_(other.size_), header_(std::move(other.header_)) {
  other.mapping_ = nullptr;
  other.size_ = 0;
}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    if (mapping_ != nullptr) ::munmap(const_cast<std::uint8_t*>(mapping_), size_);
    path_ = std::move(other.path_);
    mapping_ = other.mapping_;
    size_ = other.size_;
    header_ = std::move(other.header_);
    other.mapping_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(const_cast<std::uint8_t*>(mapping_), size_);
}

TensorView SafetensorsFile::view(const TensorEntry& entry) const {
  return {&entry, mapping_ + header_.data_offset + entry.begin, path_.get()};
}

std::optional<TensorView> SafetensorsFile::find(std::string_view name) const {
  const TensorEntry* entry = header_.find(name);
  if (entry == nullptr) return std::nullopt;
  return view(*entry);
}

TensorView SafetensorsFile::get(std::string_view name) const {
  const auto found = find(name);
  if (!found) throw_io(path() + ": has no tensor named '" + std::string(name) + "'; `fp4gemm inspect` lists what it holds");
  return *found;
}

}  // namespace fp4gemm::io
