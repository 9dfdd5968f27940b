// Hand-offs that ThreadSanitizer cannot see. gRPC runs the callbacks of one call's reactor one
// after another, but on whichever of its threads is free, and orders them with locks inside
// libgrpc, which Debian does not build with TSan. Without help, TSan takes every access a
// callback makes to the reactor's state (the stream's n-gram table, the request message) for a
// race with the callback before it, and spends most of the server's time unwinding and then
// suppressing those reports. A reactor declares the order gRPC gives it:
//
//   void OnReadDone(bool ok) override {
//     AcquireHandoff(this);   // first: sees what the previous callback did
//     ...
//     ReleaseHandoff(this);   // last, before StartRead/Finish hands the call back to gRPC
//     StartRead(&request_);
//   }
//
// Both compile to nothing outside a TSan build. Only for orderings the library guarantees: a
// real race between two of our own threads must still be reported.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define RLSCORE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RLSCORE_TSAN 1
#endif
#endif

#ifdef RLSCORE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace rlscore {

// What this thread did to `object` so far happens before whatever follows the next
// AcquireHandoff(object) on any thread.
inline void ReleaseHandoff([[maybe_unused]] const void* object) {
#ifdef RLSCORE_TSAN
  __tsan_release(const_cast<void*>(object));
#endif
}

// Everything before the last ReleaseHandoff(object), on any thread, happens before what this
// thread does next.
inline void AcquireHandoff([[maybe_unused]] const void* object) {
#ifdef RLSCORE_TSAN
  __tsan_acquire(const_cast<void*>(object));
#endif
}

}  // namespace rlscore
