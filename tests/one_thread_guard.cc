// Linked into every test program that does not say THREADS in its rlscore_test()
// (tests/CMakeLists.txt), in the builds without a sanitizer. A ThreadSanitizer build leaves those
// programs out, having no race to find where there is one thread; a program that starts a thread
// without saying so therefore stops here, in the build that runs every test, rather than lose its
// race checks unnoticed.
//
// The definition takes the C library's place for every caller (std::thread, gRPC, abseil): the
// dynamic linker looks in the executable first. The sanitizers' runtimes define pthread_create
// themselves, which is why their builds leave this file out.
#include <unistd.h>

#include <cstdlib>

extern "C" int pthread_create(void* /*thread*/, const void* /*attributes*/,
                              void* (* /*start*/)(void*), void* /*argument*/) {
  static constexpr char kMessage[] =
      "one_thread_guard: this test program started a thread, but its rlscore_test() does not say "
      "THREADS, so a ThreadSanitizer build would leave it out: add THREADS\n";
  [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  std::abort();
}
