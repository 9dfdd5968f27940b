// Starts a thread in a program linked with one_thread_guard.cc, which must stop it with its
// message (the test common.one_thread_guard_stops_a_thread, tests/CMakeLists.txt).
#include <thread>

int main() {
  std::thread([] {}).join();
  return 0;
}
