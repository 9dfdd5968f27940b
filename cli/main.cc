// rlscore: the command-line front. `rlscore serve` runs the service; `rlscore score` scores a file
// of rollouts for evaluation. Built twice (cli/launcher.h): as `rlscore-service`, with every
// command in process (RLSCORE_WITH_TRANSPORT), and as `rlscore`, which scores in process and hands
// the commands that need the transport to rlscore-service.
#include <signal.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/score.h"
#include "common/cpu_features.h"
#if RLSCORE_WITH_TRANSPORT
#include "cli/health.h"
#include "cli/serve.h"
#else
#include "cli/launcher.h"
#endif

namespace {

constexpr char kUsage[] =
    "Usage: rlscore <command> [flags]\n"
    "\n"
    "Commands:\n"
    "  serve     run the gRPC scoring service (rlscore serve --help for its flags)\n"
    "  score     score a JSONL file of rollouts, in-process or on a server (rlscore score --help)\n"
    "  health    ask a server whether it is SERVING; exit 0 if so (rlscore health --help)\n"
    "  version   print the version\n"
    "  help      show this help\n";

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "serve") {
    // Block the shutdown signals before gRPC or prometheus-cpp start a thread, so every thread
    // inherits the mask and only the drain thread's sigwait() receives them. (rlscore-service,
    // which `rlscore serve` hands over to, blocks them in its own main.) The other commands keep
    // the default: Ctrl-C or SIGTERM ends them at once.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  }
  // A client that disappears mid-write must not kill the process.
  signal(SIGPIPE, SIG_IGN);

  if (const std::string error = rlscore::CpuIsaEnvironmentError(); !error.empty()) {
    std::cerr << "rlscore: " << error << "\n";
    return 2;
  }

  const std::vector<std::string> args(argv + (argc > 1 ? 2 : 1), argv + argc);
#if RLSCORE_WITH_TRANSPORT
  if (command == "serve") return rlscore::cli::RunServe(args);
  if (command == "health") return rlscore::cli::RunHealthCommand(args);
  if (command == "score") return rlscore::cli::RunScoreCommand(args, rlscore::cli::NewRemoteScorer);
#else
  if (command == "serve" || command == "health") {
    std::cerr << "rlscore " << command << ": " << rlscore::cli::HandOverToService(argv).message()
              << "\n";
    return 1;
  }
  if (command == "score") {
    return rlscore::cli::RunScoreCommand(
        args,
        [argv](const std::string&,
               absl::Duration) -> absl::StatusOr<std::unique_ptr<rlscore::cli::BatchScorer> > {
          return rlscore::cli::HandOverToService(argv);
        });
  }
#endif
  if (command == "version" || command == "--version") {
    std::cout << "rlscore " << RLSCORE_VERSION << "\n";
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << (command.empty() ? "rlscore: no command given\n"
                                : "rlscore: unknown command \"" + command + "\"\n")
            << kUsage;
  return 2;
}
