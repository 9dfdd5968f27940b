// The configuration and profile loader (service/config.h): any text applied over the built-in
// configuration either fails with a located error or yields options that, once validated, print
// (--print-config) to a text that loads back to the same options.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.h"
#include "service/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  const std::string_view text = in.Rest();

  service::ServerOptions options = service::DefaultServerOptions();
  const absl::Status applied = service::ApplyConfigText(text, "fuzz.textproto", &options);
  if (!applied.ok()) {
    RLSCORE_FUZZ_CHECK(applied.message().find("fuzz.textproto") != std::string_view::npos);
    return 0;
  }
  if (!service::ValidateServerOptions(options).ok()) return 0;

  const std::string printed = service::ToConfigText(options);
  service::ServerOptions again = service::DefaultServerOptions();
  RLSCORE_FUZZ_CHECK(service::ApplyConfigText(printed, "printed", &again).ok());
  RLSCORE_FUZZ_CHECK(service::ValidateServerOptions(again).ok());
  RLSCORE_FUZZ_CHECK(service::ToConfigText(again) == printed);
  return 0;
}
