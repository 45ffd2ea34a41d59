// The one fact of kit/remote.hpp that the rest of kit_common reads (the timer): whether this
// process's lab calls go to a worker. Set by the judge's side when it starts one.
#include <atomic>

#include "kit/remote.hpp"

namespace kit::remote {
namespace {
std::atomic<bool> remote{false};
}  // namespace

bool calls_are_remote() { return remote; }
void mark_calls_remote() { remote = true; }

}  // namespace kit::remote
