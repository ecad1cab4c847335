// The composite-op hook (frontend/composite.h).
#include "frontend/composite.h"

namespace fxc {

namespace {
CompositeHook& slot() {
  static CompositeHook hook;
  return hook;
}
} // namespace

void set_composite_hook(const CompositeHook& hook) {
  slot() = hook;
}

const CompositeHook* composite_hook() {
  return slot().has ? &slot() : nullptr;
}

bool is_composite(std::string_view target) {
  const CompositeHook* h = composite_hook();
  return h && h->has(target);
}

} // namespace fxc
