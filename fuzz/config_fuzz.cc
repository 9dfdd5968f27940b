// The configuration and profile loader (engine/config.h): any text applied over the built-in
// configuration either fails with a located error or yields options that, once validated, print
// (--print-config) to a text that loads back to the same options. A refused value is located at
// the line of its setting when the text gave it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/config.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  const std::string_view text = in.Rest();

  engine::ServerOptions options = engine::DefaultServerOptions();
  engine::ConfigLocations in_text;
  const absl::Status applied = engine::ApplyConfigText(text, "fuzz.textproto", &options, &in_text);
  if (!applied.ok()) {
    RLSCORE_FUZZ_CHECK(applied.message().find("fuzz.textproto") != std::string_view::npos);
    return 0;
  }
  const absl::Status valid = engine::ValidateServerOptions(options);
  if (!valid.ok()) {
    const std::optional<std::string> setting = engine::SettingOf(valid);
    RLSCORE_FUZZ_CHECK(setting.has_value() && !setting->empty());
    const absl::Status located = in_text.Locate(valid, options);
    RLSCORE_FUZZ_CHECK(located.code() == valid.code());
    if (in_text.Find(*setting, options).has_value()) {
      RLSCORE_FUZZ_CHECK(located.message().substr(0, 15) == "fuzz.textproto:");
    }
    return 0;
  }

  const std::string printed = engine::ToConfigText(options);
  engine::ServerOptions again = engine::DefaultServerOptions();
  RLSCORE_FUZZ_CHECK(engine::ApplyConfigText(printed, "printed", &again).ok());
  RLSCORE_FUZZ_CHECK(engine::ValidateServerOptions(again).ok());
  RLSCORE_FUZZ_CHECK(engine::ToConfigText(again) == printed);
  return 0;
}
