#include "cli/launcher.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace rlscore::cli {

std::string ServiceBinaryPath() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return (error ? std::filesystem::path("rlscore-service") : self.parent_path() / "rlscore-service")
      .string();
}

absl::Status HandOverToService(char** argv) {
  const std::string path = ServiceBinaryPath();
  execv(path.c_str(), argv);
  const int error = errno;
  return absl::FailedPreconditionError(
      absl::StrCat("this command needs the transport, in ", path, " (installed beside rlscore), ",
                   "and it could not be run: ", std::strerror(error)));
}

}  // namespace rlscore::cli
