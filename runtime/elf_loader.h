// A loader for x86-64 ELF relocatable objects (the CPU kernels of an .fxo), without LLVM.
//
// The object is what codegen's emit_kernels_object() writes: LLVM's large code model, PIC, so
// its relocations are GOT-relative (R_X86_64_GOTPC64, GOTOFF64, GOT64) plus the absolute and
// PC-relative kinds. load_elf_object() checks every header, offset, size and index against the
// buffer, maps the allocated sections (code, read-only data, writable data, each in its own
// pages) next to a GOT it builds, applies the relocations, resolves undefined symbols (libm's
// expf, ...) in the running process with dlsym, and makes the code read + execute.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace fxc {

class ElfObject {
public:
  ~ElfObject();
  ElfObject(const ElfObject&) = delete;
  ElfObject& operator=(const ElfObject&) = delete;

  /// The address of the defined global function `name`, or nullptr.
  void* function(const std::string& name) const;

private:
  friend std::unique_ptr<ElfObject> load_elf_object(std::string_view, const std::string&);
  ElfObject() = default;
  void* base_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, void*> functions_;
};

/// Loads `bytes` (an ELF64 x86-64 relocatable object). Throws fxc::Error naming `source` when
/// the object is malformed, uses a relocation type this loader does not apply (named in the
/// message), or needs a symbol the process does not have (named).
std::unique_ptr<ElfObject> load_elf_object(std::string_view bytes, const std::string& source);

} // namespace fxc
