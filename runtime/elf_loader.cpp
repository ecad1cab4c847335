// Loads x86-64 ELF relocatable objects into executable memory: validate, map, relocate, protect.
#include "runtime/elf_loader.h"

#include "frontend/diag.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cassert>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fxc {

namespace {

// The relocation types this loader applies, one row per type. The formulas use the psABI's
// names: S symbol address, A addend, P place, GOT the GOT's address, G the symbol's GOT entry
// offset from GOT.
struct RelocType {
  uint32_t type;
  const char* name;
  int width; ///< bytes written: 4 (checked to fit in int32) or 8
};
const RelocType kRelocs[] = {
    {R_X86_64_64, "R_X86_64_64", 8},             // S + A
    {R_X86_64_PC32, "R_X86_64_PC32", 4},         // S + A - P
    {R_X86_64_PC64, "R_X86_64_PC64", 8},         // S + A - P
    {R_X86_64_GOTOFF64, "R_X86_64_GOTOFF64", 8}, // S + A - GOT
    {R_X86_64_GOTPC32, "R_X86_64_GOTPC32", 4},   // GOT + A - P
    {R_X86_64_GOTPC64, "R_X86_64_GOTPC64", 8},   // GOT + A - P
    {R_X86_64_GOT64, "R_X86_64_GOT64", 8},       // G + A
    {R_X86_64_PLTOFF64, "R_X86_64_PLTOFF64", 8}, // L + A - GOT, with no PLT: S + A - GOT
};

// Names of the types it does not apply, for the error message.
std::string reloc_name(uint32_t type) {
  static const std::pair<uint32_t, const char*> names[] = {
      {R_X86_64_NONE, "R_X86_64_NONE"},
      {R_X86_64_32, "R_X86_64_32"},
      {R_X86_64_32S, "R_X86_64_32S"},
      {R_X86_64_16, "R_X86_64_16"},
      {R_X86_64_PC16, "R_X86_64_PC16"},
      {R_X86_64_8, "R_X86_64_8"},
      {R_X86_64_PC8, "R_X86_64_PC8"},
      {R_X86_64_GOT32, "R_X86_64_GOT32"},
      {R_X86_64_PLT32, "R_X86_64_PLT32"},
      {R_X86_64_COPY, "R_X86_64_COPY"},
      {R_X86_64_GLOB_DAT, "R_X86_64_GLOB_DAT"},
      {R_X86_64_JUMP_SLOT, "R_X86_64_JUMP_SLOT"},
      {R_X86_64_RELATIVE, "R_X86_64_RELATIVE"},
      {R_X86_64_GOTPCREL, "R_X86_64_GOTPCREL"},
      {R_X86_64_TPOFF64, "R_X86_64_TPOFF64"},
      {R_X86_64_TLSGD, "R_X86_64_TLSGD"},
      {R_X86_64_TLSLD, "R_X86_64_TLSLD"},
      {R_X86_64_DTPOFF32, "R_X86_64_DTPOFF32"},
      {R_X86_64_GOTTPOFF, "R_X86_64_GOTTPOFF"},
      {R_X86_64_TPOFF32, "R_X86_64_TPOFF32"},
      {R_X86_64_GOTPCREL64, "R_X86_64_GOTPCREL64"},
      {R_X86_64_GOTPLT64, "R_X86_64_GOTPLT64"},
      {R_X86_64_SIZE32, "R_X86_64_SIZE32"},
      {R_X86_64_SIZE64, "R_X86_64_SIZE64"},
      {R_X86_64_GOTPCRELX, "R_X86_64_GOTPCRELX"},
      {R_X86_64_REX_GOTPCRELX, "R_X86_64_REX_GOTPCRELX"},
  };
  for (auto& [t, n] : names)
    if (t == type) return n;
  for (const RelocType& r : kRelocs)
    if (r.type == type) return r.name;
  return "type " + std::to_string(type);
}

constexpr uint64_t kMaxImageBytes = uint64_t(1) << 32; // 4 GiB of code and data at most
constexpr uint64_t kMaxAlign = 4096;

size_t page_size() {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? size_t(p) : 4096;
}

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// Where each allocated section goes: code pages, read-only pages (data and the GOT), writable
// pages. Each region starts on a page boundary so that it can be protected on its own.
enum Region { Code, ReadOnly, Writable, kRegions };

class Loader {
public:
  Loader(std::string_view bytes, const std::string& source) : b_(bytes), source_(source) {}

  /// Maps and relocates the object; the caller owns the mapping [*base, *base + *size).
  void load(void** base, size_t* size, std::map<std::string, void*>* functions) {
    read_headers();
    read_symbols();
    layout();
    map();
    try {
      copy_sections();
      apply_relocations();
      collect_functions(functions);
      protect();
    } catch (...) {
      munmap(base_, size_);
      throw;
    }
    *base = base_;
    *size = size_;
  }

private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(source_, "kernel object: " + msg);
  }

  // Copies a struct from the buffer at `off`, checking that it lies inside.
  template <class T> T read(uint64_t off, const char* what) const {
    if (off > b_.size() || b_.size() - off < sizeof(T))
      fail(std::string(what) + " lies outside the object (" + std::to_string(b_.size()) +
           " bytes)");
    T v;
    std::memcpy(&v, b_.data() + off, sizeof(T));
    return v;
  }

  void check_range(uint64_t off, uint64_t size, const std::string& what) const {
    if (off > b_.size() || size > b_.size() - off)
      fail(what + " (offset " + std::to_string(off) + ", " + std::to_string(size) +
           " bytes) lies outside the object (" + std::to_string(b_.size()) + " bytes)");
  }

  std::string section_name(size_t i) const {
    if (shstr_ < 0) return "section " + std::to_string(i);
    const Elf64_Shdr& s = sh_[size_t(shstr_)];
    uint64_t n = sh_[i].sh_name;
    if (n >= s.sh_size) return "section " + std::to_string(i);
    const char* p = b_.data() + s.sh_offset + n;
    size_t len = strnlen(p, size_t(s.sh_size - n));
    if (len == s.sh_size - n) return "section " + std::to_string(i);
    return std::string(p, len);
  }

  void read_headers() {
    eh_ = read<Elf64_Ehdr>(0, "the ELF header");
    if (std::memcmp(eh_.e_ident, ELFMAG, SELFMAG) != 0) fail("not an ELF file (bad magic)");
    if (eh_.e_ident[EI_CLASS] != ELFCLASS64 || eh_.e_ident[EI_DATA] != ELFDATA2LSB)
      fail("not a 64-bit little-endian ELF object");
    if (eh_.e_type != ET_REL)
      fail("not a relocatable object (e_type " + std::to_string(eh_.e_type) + ")");
    if (eh_.e_machine != EM_X86_64)
      fail("built for machine " + std::to_string(eh_.e_machine) + ", not x86-64");
    if (eh_.e_shentsize != sizeof(Elf64_Shdr)) fail("unexpected section header size");
    if (eh_.e_shnum == 0 || eh_.e_shnum >= SHN_LORESERVE) fail("bad section count");
    check_range(eh_.e_shoff, uint64_t(eh_.e_shnum) * sizeof(Elf64_Shdr), "the section headers");
    for (size_t i = 0; i < eh_.e_shnum; ++i)
      sh_.push_back(read<Elf64_Shdr>(eh_.e_shoff + i * sizeof(Elf64_Shdr), "a section header"));
    if (eh_.e_shstrndx != SHN_UNDEF && eh_.e_shstrndx < sh_.size() &&
        sh_[eh_.e_shstrndx].sh_type == SHT_STRTAB) {
      const Elf64_Shdr& s = sh_[eh_.e_shstrndx];
      check_range(s.sh_offset, s.sh_size, "the section name table");
      shstr_ = eh_.e_shstrndx;
    }
    for (size_t i = 0; i < sh_.size(); ++i) {
      const Elf64_Shdr& s = sh_[i];
      if (s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL)
        check_range(s.sh_offset, s.sh_size, section_name(i));
      if (s.sh_type == SHT_REL) fail(section_name(i) + ": REL relocations are not supported");
      if (s.sh_type == SHT_SYMTAB) {
        if (symtab_ >= 0) fail("more than one symbol table");
        symtab_ = int(i);
      }
      if ((s.sh_flags & SHF_ALLOC) && s.sh_size > 0) {
        if (s.sh_type != SHT_PROGBITS && s.sh_type != SHT_NOBITS && s.sh_type != SHT_INIT_ARRAY &&
            s.sh_type != SHT_FINI_ARRAY && s.sh_type != SHT_X86_64_UNWIND)
          fail(section_name(i) + ": unsupported allocated section type " +
               std::to_string(s.sh_type));
        if (s.sh_type == SHT_INIT_ARRAY || s.sh_type == SHT_FINI_ARRAY)
          fail(section_name(i) + ": static constructors are not supported");
        if (s.sh_flags & SHF_TLS) fail(section_name(i) + ": thread-local data is not supported");
        uint64_t a = s.sh_addralign ? s.sh_addralign : 1;
        if ((a & (a - 1)) != 0 || a > kMaxAlign)
          fail(section_name(i) + ": bad alignment " + std::to_string(a));
        if (s.sh_size > kMaxImageBytes) fail(section_name(i) + " is too large");
      }
    }
    if (symtab_ < 0) fail("no symbol table");
  }

  void read_symbols() {
    const Elf64_Shdr& st = sh_[size_t(symtab_)];
    if (st.sh_entsize != sizeof(Elf64_Sym) || st.sh_size % sizeof(Elf64_Sym) != 0)
      fail("malformed symbol table");
    if (st.sh_link >= sh_.size() || sh_[st.sh_link].sh_type != SHT_STRTAB)
      fail("the symbol table has no string table");
    strtab_ = &sh_[st.sh_link];
    size_t n = size_t(st.sh_size / sizeof(Elf64_Sym));
    for (size_t i = 0; i < n; ++i) {
      Elf64_Sym s = read<Elf64_Sym>(st.sh_offset + i * sizeof(Elf64_Sym), "a symbol");
      syms_.push_back(s);
      names_.push_back(symbol_name(s));
    }
  }

  std::string symbol_name(const Elf64_Sym& s) const {
    if (s.st_name >= strtab_->sh_size) fail("a symbol name lies outside the string table");
    const char* p = b_.data() + strtab_->sh_offset + s.st_name;
    size_t max = size_t(strtab_->sh_size - s.st_name);
    size_t len = strnlen(p, max);
    if (len == max) fail("a symbol name is not terminated");
    return std::string(p, len);
  }

  static Region region_of(const Elf64_Shdr& s) {
    if (s.sh_flags & SHF_EXECINSTR) return Code;
    if (s.sh_flags & SHF_WRITE) return Writable;
    return ReadOnly;
  }

  void layout() {
    const uint64_t page = page_size();
    offset_.assign(sh_.size(), UINT64_MAX);
    uint64_t at = 0;
    for (int r = 0; r < kRegions; ++r) {
      at = align_up(at, page);
      region_begin_[r] = at;
      for (size_t i = 0; i < sh_.size(); ++i) {
        const Elf64_Shdr& s = sh_[i];
        if (!(s.sh_flags & SHF_ALLOC) || s.sh_size == 0 || region_of(s) != r) continue;
        at = align_up(at, s.sh_addralign ? s.sh_addralign : 1);
        offset_[i] = at;
        at += s.sh_size;
        if (at > kMaxImageBytes) fail("the sections exceed 4 GiB");
      }
      if (r == ReadOnly) { // the GOT: one entry per symbol
        at = align_up(at, 8);
        got_ = at;
        at += 8 * syms_.size();
      }
      region_end_[r] = at;
    }
    size_ = size_t(align_up(std::max<uint64_t>(at, 1), page));
  }

  void map() {
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("cannot map " + std::to_string(size_) + " bytes");
    base_ = static_cast<char*>(p);
  }

  void copy_sections() {
    for (size_t i = 0; i < sh_.size(); ++i) {
      const Elf64_Shdr& s = sh_[i];
      if (offset_[i] == UINT64_MAX || s.sh_type == SHT_NOBITS) continue; // NOBITS stays zero
      std::memcpy(base_ + offset_[i], b_.data() + s.sh_offset, size_t(s.sh_size));
    }
  }

  // The address of symbol `i` (resolving undefined ones in the process).
  uint64_t symbol_address(size_t i) {
    const Elf64_Sym& s = syms_[i];
    const std::string& name = names_[i];
    if (s.st_shndx == SHN_UNDEF) {
      if (i == 0) return 0;
      if (name == "_GLOBAL_OFFSET_TABLE_") return uint64_t(base_ + got_);
      auto it = resolved_.find(name);
      if (it != resolved_.end()) return it->second;
      void* p = dlsym(RTLD_DEFAULT, name.c_str());
      if (!p) fail("undefined symbol '" + name + "': not found in the running process");
      return resolved_[name] = uint64_t(p);
    }
    if (s.st_shndx == SHN_ABS) return s.st_value;
    if (s.st_shndx == SHN_COMMON) fail("common symbol '" + name + "' is not supported");
    if (s.st_shndx >= sh_.size()) fail("symbol '" + name + "' has a bad section index");
    if (offset_[s.st_shndx] == UINT64_MAX)
      fail("symbol '" + name + "' is defined in " + section_name(s.st_shndx) +
           ", which is not loaded");
    if (s.st_value > sh_[s.st_shndx].sh_size)
      fail("symbol '" + name + "' lies outside its section");
    return uint64_t(base_ + offset_[s.st_shndx]) + s.st_value;
  }

  void apply_relocations() {
    for (size_t ri = 0; ri < sh_.size(); ++ri) {
      const Elf64_Shdr& rs = sh_[ri];
      if (rs.sh_type != SHT_RELA) continue;
      if (rs.sh_info >= sh_.size()) fail(section_name(ri) + ": bad target section");
      size_t ti = rs.sh_info;
      if (offset_[ti] == UINT64_MAX) continue; // relocates a section that is not loaded
      if (rs.sh_link != uint32_t(symtab_))
        fail(section_name(ri) + ": not tied to the symbol table");
      if (rs.sh_entsize != sizeof(Elf64_Rela) || rs.sh_size % sizeof(Elf64_Rela) != 0)
        fail(section_name(ri) + ": malformed relocation table");
      if (sh_[ti].sh_type == SHT_NOBITS) fail(section_name(ri) + ": relocates a NOBITS section");
      size_t n = size_t(rs.sh_size / sizeof(Elf64_Rela));
      for (size_t k = 0; k < n; ++k) {
        Elf64_Rela r = read<Elf64_Rela>(rs.sh_offset + k * sizeof(Elf64_Rela), "a relocation");
        apply(r, ti, section_name(ri));
      }
    }
  }

  void apply(const Elf64_Rela& r, size_t target, const std::string& where) {
    uint32_t type = ELF64_R_TYPE(r.r_info);
    size_t sym = ELF64_R_SYM(r.r_info);
    const RelocType* rt = nullptr;
    for (const RelocType& t : kRelocs)
      if (t.type == type) rt = &t;
    if (!rt) fail(where + ": unsupported relocation " + reloc_name(type));
    if (sym >= syms_.size()) fail(where + ": relocation symbol index out of range");
    if (r.r_offset > sh_[target].sh_size || sh_[target].sh_size - r.r_offset < uint64_t(rt->width))
      fail(where + ": relocation offset outside its section");
    uint64_t P = uint64_t(base_ + offset_[target]) + r.r_offset;
    uint64_t A = uint64_t(r.r_addend);
    uint64_t GOT = uint64_t(base_ + got_);
    uint64_t v = 0;
    switch (type) {
    case R_X86_64_64:
      v = symbol_address(sym) + A;
      break;
    case R_X86_64_PC32:
    case R_X86_64_PC64:
      v = symbol_address(sym) + A - P;
      break;
    case R_X86_64_GOTOFF64:
    case R_X86_64_PLTOFF64:
      v = symbol_address(sym) + A - GOT;
      break;
    case R_X86_64_GOTPC32:
    case R_X86_64_GOTPC64:
      v = GOT + A - P;
      break;
    case R_X86_64_GOT64: {
      uint64_t entry = symbol_address(sym);
      std::memcpy(base_ + got_ + 8 * sym, &entry, 8);
      v = 8 * uint64_t(sym) + A;
      break;
    }
    default:
      assert(false && "a relocation type in kRelocs without a formula");
    }
    if (rt->width == 4) {
      int64_t sv = int64_t(v);
      if (sv < INT32_MIN || sv > INT32_MAX)
        fail(where + ": " + rt->name + " does not fit in 32 bits");
      int32_t w = int32_t(sv);
      std::memcpy(reinterpret_cast<void*>(P), &w, 4);
    } else {
      std::memcpy(reinterpret_cast<void*>(P), &v, 8);
    }
  }

  void collect_functions(std::map<std::string, void*>* functions) {
    for (size_t i = 1; i < syms_.size(); ++i) {
      const Elf64_Sym& s = syms_[i];
      if (ELF64_ST_BIND(s.st_info) == STB_LOCAL || s.st_shndx == SHN_UNDEF) continue;
      if (ELF64_ST_TYPE(s.st_info) != STT_FUNC) continue;
      (*functions)[names_[i]] = reinterpret_cast<void*>(symbol_address(i));
    }
  }

  void protect() {
    const int prot[kRegions] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
    for (int r = 0; r < kRegions; ++r) {
      uint64_t begin = region_begin_[r], end = align_up(region_end_[r], page_size());
      if (end <= begin) continue;
      if (mprotect(base_ + begin, size_t(end - begin), prot[r]) != 0)
        fail("cannot protect the loaded code");
    }
  }

  std::string_view b_;
  const std::string& source_;
  Elf64_Ehdr eh_{};
  std::vector<Elf64_Shdr> sh_;
  int shstr_ = -1, symtab_ = -1;
  const Elf64_Shdr* strtab_ = nullptr;
  std::vector<Elf64_Sym> syms_;
  std::vector<std::string> names_;
  std::vector<uint64_t> offset_; ///< each loaded section's offset in the image; UINT64_MAX: none
  uint64_t got_ = 0;
  uint64_t region_begin_[kRegions] = {}, region_end_[kRegions] = {};
  char* base_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, uint64_t> resolved_;
};

} // namespace

ElfObject::~ElfObject() {
  if (base_) munmap(base_, size_);
}

void* ElfObject::function(const std::string& name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second;
}

std::unique_ptr<ElfObject> load_elf_object(std::string_view bytes, const std::string& source) {
  std::unique_ptr<ElfObject> obj(new ElfObject());
  Loader(bytes, source).load(&obj->base_, &obj->size_, &obj->functions_);
  return obj;
}

} // namespace fxc
