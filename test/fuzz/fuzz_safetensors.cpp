// libFuzzer harness: the safetensors reader (weights of an .fxg, --inputs, --expect), every
// tensor loaded. Any input must give tensors or an fxc::Error.
#include "fuzz_common.h"

#include "frontend/diag.h"
#include "frontend/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fxc::fuzz::write_input(data, size, ".safetensors");
  try {
    for (const auto& [name, w] : fxc::read_safetensors(path))
      if (w.storage->nbytes() <= fxc::fuzz::kMaxLoadBytes) (void)w.storage->data();
  } catch (const fxc::Error&) {
  }
  return 0;
}
