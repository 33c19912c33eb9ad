#include "backends/plugin/plugin_library.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/plugin/plugin_enums.hpp"
#include "hal/version.hpp"

namespace hal::plugin {
namespace {

std::string status_name(hal_status status) {
  if (const std::optional<ErrorCode> code = error_code_of(status))
    return std::string(to_string(*code));
  return "status " + std::to_string(status);
}

bool valid_name(const char* name) {
  if (name == nullptr || !std::islower(static_cast<unsigned char>(name[0]))) return false;
  for (const char* c = name; *c; ++c)
    if (!std::islower(static_cast<unsigned char>(*c)) &&
        !std::isdigit(static_cast<unsigned char>(*c)) && *c != '_')
      return false;
  return true;
}

// Closes the library unless released: for the failures of load_plugin.
struct LibraryGuard {
  void* handle;
  ~LibraryGuard() {
    if (handle) dlclose(handle);
  }
};

std::string version_of(const hal_plugin_api& api) {
  return std::to_string(api.abi_major) + "." + std::to_string(api.abi_minor);
}

using ElfHeader = ElfW(Ehdr);
using ProgramHeader = ElfW(Phdr);

constexpr unsigned char kHostClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
constexpr unsigned char kHostByteOrder =
    std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
// The e_machine of this process's code; EM_NONE where unknown here, and then dlopen judges.
constexpr uint16_t kHostMachine =
#if defined(__x86_64__)
    EM_X86_64;
#elif defined(__aarch64__)
    EM_AARCH64;
#elif defined(__i386__)
    EM_386;
#elif defined(__arm__)
    EM_ARM;
#elif defined(__riscv)
    EM_RISCV;
#elif defined(__powerpc64__)
    EM_PPC64;
#elif defined(__s390x__)
    EM_S390;
#else
    EM_NONE;
#endif

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_AARCH64:
      return "AArch64";
    case EM_386:
      return "32-bit x86";
    case EM_ARM:
      return "32-bit ARM";
    case EM_RISCV:
      return "RISC-V";
    case EM_PPC64:
      return "64-bit POWER";
    case EM_S390:
      return "s390";
    default:
      return "ELF machine " + std::to_string(machine);
  }
}

std::string byte_order_name(unsigned char order) {
  if (order == ELFDATA2LSB) return "little-endian";
  if (order == ELFDATA2MSB) return "big-endian";
  return "of byte order " + std::to_string(order);
}

std::string class_name(unsigned char elf_class) {
  if (elf_class == ELFCLASS64) return "64-bit";
  if (elf_class == ELFCLASS32) return "32-bit";
  return "ELF class " + std::to_string(elf_class);
}

// Closes a file descriptor when it goes.
struct FileGuard {
  int fd;
  ~FileGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads all `size` bytes at `offset`, or returns false (errno says why, 0 at the file's end).
bool read_at(int fd, void* out, size_t size, uint64_t offset) {
  auto* bytes = static_cast<char*>(out);
  while (size > 0) {
    errno = 0;
    const ssize_t got = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

std::string read_failure(const std::string& path) {
  return path + " cannot be read: " + (errno ? std::strerror(errno) : "it ended early");
}

// Whether `length` bytes from `offset` lie within a file of `size` bytes (without overflow).
bool within(uint64_t offset, uint64_t length, uint64_t size) {
  return length <= size && offset <= size - length;
}

// The message for a part of the file that ends past its end: "... ends at byte X, the file
// has Y", as a partial copy or download leaves it.
std::string cut_short(const std::string& path, const std::string& part, uint64_t offset,
                      uint64_t length, uint64_t size) {
  uint64_t end = 0;
  const std::string at =
      __builtin_add_overflow(offset, length, &end) ? "past 2^64" : std::to_string(end);
  return path + " is cut short: " + part + " ends at byte " + at + ", the file has " +
         std::to_string(size) + " bytes";
}

// The ELF identification and header: for this machine, and whole.
std::string header_defect(const std::string& path, const ElfHeader& header, uint64_t size) {
  if (size < EI_NIDENT) return cut_short(path, "its ELF header", 0, sizeof header, size);
  // The class first: a 32-bit file is one, whatever its length beside a 64-bit header.
  if (header.e_ident[EI_CLASS] != kHostClass)
    return path + " is a " + class_name(header.e_ident[EI_CLASS]) + " ELF file; this hal is " +
           class_name(kHostClass);
  if (size < sizeof header) return cut_short(path, "its ELF header", 0, sizeof header, size);
  if (header.e_ident[EI_DATA] != kHostByteOrder)
    return path + " is " + byte_order_name(header.e_ident[EI_DATA]) + "; this machine is " +
           byte_order_name(kHostByteOrder);
  if (kHostMachine != EM_NONE && header.e_machine != kHostMachine)
    return path + " is built for " + machine_name(header.e_machine) + "; this hal runs on " +
           machine_name(kHostMachine);
  if (header.e_phnum > 0 && size_t{header.e_phentsize} != sizeof(ProgramHeader))
    return path + " has program headers of " + std::to_string(header.e_phentsize) +
           " bytes, not the " + std::to_string(sizeof(ProgramHeader)) + " of its ELF class";
  return "";
}

// The program headers, and the file bytes of every loadable segment: those dlopen maps (a
// segment of no file bytes, bss only, maps none, wherever its offset points).
std::string segments_defect(const std::string& path, int fd, const ElfHeader& header,
                            uint64_t size) {
  const uint64_t table = uint64_t{header.e_phnum} * sizeof(ProgramHeader);
  if (!within(header.e_phoff, table, size))
    return cut_short(path, "its program header table", header.e_phoff, table, size);
  std::vector<ProgramHeader> segments(header.e_phnum);
  if (!read_at(fd, segments.data(), table, header.e_phoff)) return read_failure(path);
  for (size_t i = 0; i < segments.size(); ++i) {
    const ProgramHeader& segment = segments[i];
    if (segment.p_type == PT_LOAD && segment.p_filesz > 0 &&
        !within(segment.p_offset, segment.p_filesz, size))
      return cut_short(path, "segment " + std::to_string(i), segment.p_offset, segment.p_filesz,
                       size);
  }
  return "";
}

// The section header table, at the file's end as linkers write it: a cheap test of the whole.
std::string sections_defect(const std::string& path, const ElfHeader& header, uint64_t size) {
  if (header.e_shoff == 0) return "";  // none (a stripped file may have none)
  // e_shnum 0 with a table: the count is in the first entry, which must be there.
  const uint64_t count = header.e_shnum > 0 ? uint64_t{header.e_shnum} : 1;
  const uint64_t table = count * header.e_shentsize;
  if (!within(header.e_shoff, table, size))
    return cut_short(path, "its section header table", header.e_shoff, table, size);
  return "";
}

}  // namespace

std::string PluginLibrary::last_error() const {
  const char* message = api && api->last_error ? api->last_error() : nullptr;
  return message && *message ? message : "(the plugin gave no message)";
}

void PluginLibrary::check(hal_status status, const std::string& what) const {
  if (status == HAL_STATUS_OK) return;
  // OK is handled above; a number plugin.h lacks is the plugin's bug.
  const ErrorCode code = error_code_of(status).value_or(ErrorCode::Internal);
  throw Error(code, what + ": " + last_error(), status);
}

void check_plugin_table(const hal_plugin_api* api, const std::string& path) {
  const std::string ours =
      std::to_string(HAL_PLUGIN_ABI_MAJOR) + "." + std::to_string(HAL_PLUGIN_ABI_MINOR);
  if (!api) throw Error(ErrorCode::BackendUnavailable, "plugin " + path + " returned no table");
  const size_t versioned = offsetof(hal_plugin_api, abi_minor) + sizeof(api->abi_minor);
  if (api->struct_size < versioned)
    throw Error(ErrorCode::PluginAbiMismatch, "plugin " + path + ": its table holds " +
                                                  std::to_string(api->struct_size) +
                                                  " bytes, too few to hold even the ABI version (" +
                                                  std::to_string(versioned) + ")");
  if (api->abi_major != HAL_PLUGIN_ABI_MAJOR)
    throw Error(ErrorCode::PluginAbiMismatch, "plugin " + path + " speaks plugin ABI " +
                                                  version_of(*api) + "; this hal speaks " + ours +
                                                  " and loads plugins of major version " +
                                                  std::to_string(HAL_PLUGIN_ABI_MAJOR) + " only");
  const size_t required =
      offsetof(hal_plugin_api, event_elapsed_ms) + sizeof(api->event_elapsed_ms);
  if (api->struct_size < required)
    throw Error(ErrorCode::PluginAbiMismatch,
                "plugin " + path + ": its table holds " + std::to_string(api->struct_size) +
                    " bytes, fewer than the " + std::to_string(required) +
                    " that every version of the ABI requires");
  // Named, so that a vendor reading the error knows which entry to fill in.
  const std::pair<const char*, const void*> required_functions[] = {
      {"last_error", reinterpret_cast<const void*>(api->last_error)},
      {"device_count", reinterpret_cast<const void*>(api->device_count)},
      {"device_get", reinterpret_cast<const void*>(api->device_get)},
      {"device_properties", reinterpret_cast<const void*>(api->device_properties)},
      {"device_memory_free", reinterpret_cast<const void*>(api->device_memory_free)},
      {"buffer_allocate", reinterpret_cast<const void*>(api->buffer_allocate)},
      {"buffer_free", reinterpret_cast<const void*>(api->buffer_free)},
      {"stream_create", reinterpret_cast<const void*>(api->stream_create)},
      {"stream_destroy", reinterpret_cast<const void*>(api->stream_destroy)},
      {"stream_synchronize", reinterpret_cast<const void*>(api->stream_synchronize)},
      {"stream_query", reinterpret_cast<const void*>(api->stream_query)},
      {"copy_to_device", reinterpret_cast<const void*>(api->copy_to_device)},
      {"copy_to_host", reinterpret_cast<const void*>(api->copy_to_host)},
      {"copy_on_device", reinterpret_cast<const void*>(api->copy_on_device)},
      {"fill", reinterpret_cast<const void*>(api->fill)},
      {"host_callback", reinterpret_cast<const void*>(api->host_callback)},
      {"event_create", reinterpret_cast<const void*>(api->event_create)},
      {"event_destroy", reinterpret_cast<const void*>(api->event_destroy)},
      {"event_record", reinterpret_cast<const void*>(api->event_record)},
      {"stream_wait_event", reinterpret_cast<const void*>(api->stream_wait_event)},
      {"event_synchronize", reinterpret_cast<const void*>(api->event_synchronize)},
      {"event_query", reinterpret_cast<const void*>(api->event_query)},
      {"event_elapsed_ms", reinterpret_cast<const void*>(api->event_elapsed_ms)}};
  for (const auto& [field, function] : required_functions)
    if (!function)
      throw Error(
          ErrorCode::BackendUnavailable,
          "plugin " + path + " leaves the required function " + field + " of its table NULL");
  if (!valid_name(api->name))
    throw Error(ErrorCode::BackendUnavailable,
                "plugin " + path + " names its backend '" + (api->name ? api->name : "") +
                    "': a name is lower-case letters, digits and '_', starting with a letter");
}

std::string elf_defect(const std::string& path) {
  // O_NONBLOCK: a FIFO put in the file's place since it was listed must not block hal here.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return path + " cannot be opened: " + std::strerror(errno);
  const FileGuard guard{fd};
  struct stat file {};
  if (::fstat(fd, &file) != 0) return path + " cannot be examined: " + std::strerror(errno);
  if (!S_ISREG(file.st_mode)) return path + " is not a regular file";
  const uint64_t size = static_cast<uint64_t>(file.st_size);
  if (size == 0) return path + " is empty";
  ElfHeader header{};
  const size_t have = static_cast<size_t>(std::min<uint64_t>(size, sizeof header));
  if (!read_at(fd, &header, have, 0)) return read_failure(path);
  if (have < SELFMAG || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return path + " is not an ELF file (it does not start with \\x7fELF), so no shared library";
  std::string defect = header_defect(path, header, size);
  if (defect.empty()) defect = segments_defect(path, fd, header, size);
  if (defect.empty()) defect = sections_defect(path, header, size);
  return defect;
}

PluginLibrary load_plugin(const std::string& path) {
  // A file dlopen would map past its end kills the process: refuse it first.
  if (const std::string defect = elf_defect(path); !defect.empty())
    throw Error(ErrorCode::BackendUnavailable, "cannot load plugin " + path + ": " + defect);
  PluginLibrary library;
  library.path = path;
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw Error(ErrorCode::BackendUnavailable,
                "cannot load plugin " + path + ": " + (why ? why : "dlopen failed"));
  }
  LibraryGuard guard{handle};
  auto init = reinterpret_cast<hal_plugin_init_fn>(dlsym(handle, HAL_PLUGIN_INIT_SYMBOL));
  if (!init)
    throw Error(ErrorCode::BackendUnavailable,
                "plugin " + path + " exports no " HAL_PLUGIN_INIT_SYMBOL ": not a hal plugin");
  const hal_plugin_host_info host{sizeof(hal_plugin_host_info), HAL_PLUGIN_ABI_MAJOR,
                                  HAL_PLUGIN_ABI_MINOR, kVersion.data(), path.c_str()};
  // Once init has run the library stays mapped, whatever follows: it may have started threads
  // or registered thread-local destructors, and the ABI has no entry to undo them.
  guard.handle = nullptr;
  const hal_plugin_api* api = nullptr;
  const hal_status status = init(&host, &api);
  library.api = api;
  if (status != HAL_STATUS_OK) {
    // The table is not checked yet: last_error is read only where its size covers it (a short
    // table's would be past its end).
    const bool has_last_error =
        api && api->struct_size >= offsetof(hal_plugin_api, last_error) + sizeof(api->last_error);
    const std::string message =
        has_last_error && api->last_error && api->last_error() ? api->last_error() : "no message";
    throw Error(status == HAL_STATUS_ABI_MISMATCH ? ErrorCode::PluginAbiMismatch
                                                  : ErrorCode::BackendUnavailable,
                "plugin " + path + ": " HAL_PLUGIN_INIT_SYMBOL " failed with " +
                    status_name(status) + ": " + message,
                status);
  }
  check_plugin_table(api, path);
  library.handle = handle;
  return library;
}

}  // namespace hal::plugin
