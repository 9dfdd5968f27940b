// Compiled, not run, by tests/common/CMakeLists.txt: with RLSCORE_TAKE_THE_LOCK it must compile
// under -Wthread-safety -Werror, and without it it must not, so the annotations of common/mutex.h
// are seen by the compiler.
#include "common/mutex.h"

namespace {

class Account {
 public:
  void Deposit(int amount) {
#ifdef RLSCORE_TAKE_THE_LOCK
    rlscore::MutexLock lock(&mu_);
#endif
    balance_ += amount;
  }

  int WaitForFunds(int at_least) {
    rlscore::MutexLock lock(&mu_);
    while (balance_ < at_least) funded_.Wait(&mu_);
    return balance_;
  }

 private:
  rlscore::Mutex mu_;
  rlscore::CondVar funded_;
  int balance_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

int main() {
  Account account;
  account.Deposit(1);
  return account.WaitForFunds(1) == 1 ? 0 : 1;
}
