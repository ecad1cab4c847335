// Reference-counted byte buffers behind tensors and weights.
#include "frontend/storage.h"

#include <cstring>

namespace fxc {

Storage::Storage(size_t nbytes) : nbytes_(nbytes), bytes_(new std::byte[nbytes ? nbytes : 1]()) {}

Storage::Storage(size_t nbytes, Loader load, bool load_writes_all)
    : nbytes_(nbytes), loader_(std::move(load)), load_writes_all_(load_writes_all) {
  pending_.store(bool(loader_), std::memory_order_release);
}

std::shared_ptr<Storage> Storage::uninitialized(size_t nbytes) {
  auto s = std::shared_ptr<Storage>(new Storage(nbytes, Loader()));
  s->bytes_.reset(new std::byte[nbytes ? nbytes : 1]);
  return s;
}

std::shared_ptr<Storage> Storage::lazy(size_t nbytes, Loader load, bool load_writes_all) {
  return std::shared_ptr<Storage>(new Storage(nbytes, std::move(load), load_writes_all));
}

std::shared_ptr<Storage> Storage::borrowed(std::byte* data, size_t nbytes,
                                           std::shared_ptr<const void> owner) {
  auto s = std::shared_ptr<Storage>(new Storage(nbytes, Loader()));
  s->borrowed_ = data;
  s->owner_ = std::move(owner);
  return s;
}

std::shared_ptr<Storage> Storage::borrowed(std::byte* data, size_t nbytes,
                                           std::shared_ptr<const void> owner, Check check) {
  auto s = borrowed(data, nbytes, std::move(owner));
  s->check_ = std::move(check);
  s->pending_.store(bool(s->check_), std::memory_order_release);
  return s;
}

std::byte* Storage::data() {
  if (borrowed_ && !pending_.load(std::memory_order_acquire)) return borrowed_;
  // Every caller passes through call_once, so that threads reading a lazy storage at once see
  // its loaded bytes (and loader_ is only written inside it). A loader that throws leaves the
  // flag unset: the next call tries again.
  std::call_once(once_, [&] {
    if (check_) { // borrowed bytes, checked once
      check_();
      check_ = nullptr;
      pending_.store(false, std::memory_order_release);
      return;
    }
    if (!loader_) return; // owned bytes from the constructor
    std::unique_ptr<std::byte[]> b(load_writes_all_ ? new std::byte[nbytes_ ? nbytes_ : 1]
                                                    : new std::byte[nbytes_ ? nbytes_ : 1]());
    loader_(b.get(), nbytes_);
    bytes_ = std::move(b);
    loader_ = nullptr;
    pending_.store(false, std::memory_order_release);
  });
  return borrowed_ ? borrowed_ : bytes_.get();
}

} // namespace fxc
