// Reference-counted byte buffers behind tensors and weights.
#include "frontend/storage.h"

#include <cstring>

namespace fxc {

Storage::Storage(size_t nbytes) : nbytes_(nbytes), bytes_(new std::byte[nbytes ? nbytes : 1]()) {}

Storage::Storage(size_t nbytes, Loader load) : nbytes_(nbytes), loader_(std::move(load)) {}

std::shared_ptr<Storage> Storage::uninitialized(size_t nbytes) {
  auto s = std::shared_ptr<Storage>(new Storage(nbytes, Loader()));
  s->bytes_.reset(new std::byte[nbytes ? nbytes : 1]);
  return s;
}

std::shared_ptr<Storage> Storage::lazy(size_t nbytes, Loader load) {
  return std::shared_ptr<Storage>(new Storage(nbytes, std::move(load)));
}

std::shared_ptr<Storage> Storage::borrowed(std::byte* data, size_t nbytes,
                                           std::shared_ptr<const void> owner) {
  auto s = std::shared_ptr<Storage>(new Storage(nbytes, Loader()));
  s->borrowed_ = data;
  s->owner_ = std::move(owner);
  return s;
}

std::byte* Storage::data() {
  if (borrowed_) return borrowed_;
  // Every caller passes through call_once, so that threads reading a lazy storage at once see
  // its loaded bytes (and loader_ is only written inside it). A loader that throws leaves the
  // flag unset: the next call tries again.
  std::call_once(once_, [&] {
    if (!loader_) return; // owned bytes from the constructor
    std::unique_ptr<std::byte[]> b(new std::byte[nbytes_ ? nbytes_ : 1]());
    loader_(b.get(), nbytes_);
    bytes_ = std::move(b);
    loader_ = nullptr;
  });
  return bytes_.get();
}

} // namespace fxc
