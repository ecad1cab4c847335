// libFuzzer harness: the .fxg / .fxg.zst reader. Any input must give a graph or an fxc::Error.
#include "fuzz_common.h"

#include "frontend/diag.h"
#include "frontend/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fxc::fuzz::write_input(data, size, ".fxg");
  try {
    fxc::fuzz::exercise(fxc::import_fxg(path));
  } catch (const fxc::Error&) {
  }
  return 0;
}
