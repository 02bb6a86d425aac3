#include "core/unlinked_on_signal.hpp"

#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>

namespace distzo {

namespace {

static_assert(std::atomic<int>::is_always_lock_free, "the handler reads the slots' states");

enum : int { kFree = 0, kFilling = 1, kSet = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};

Slot slots[4];

}  // namespace

UnlinkedOnSignal::UnlinkedOnSignal(const std::string& path) {
  if (path.empty() || path.size() >= sizeof(Slot::path)) return;
  for (int i = 0; i < static_cast<int>(sizeof(slots) / sizeof(slots[0])); ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(kSet);  // the handler sees a whole path or none
    slot_ = i;
    return;
  }
}

UnlinkedOnSignal::~UnlinkedOnSignal() {
  if (slot_ >= 0) slots[slot_].state.store(kFree);
}

void unlink_registered_files() noexcept {
  for (Slot& s : slots)
    if (s.state.load() == kSet) unlink(s.path);
}

}  // namespace distzo
