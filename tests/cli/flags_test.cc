#include "cli/flags.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Values {
  uint64_t bytes = 0;
  uint32_t size = 0;
  std::string address;
  bool verbose = false;
};

FlagSet MakeFlags(Values* v) {
  FlagSet flags("rlscore test");
  flags.Add({"max-message-bytes", "N", "bytes",
             [v](std::string_view s) { return ParseUint64(s, &v->bytes); }});
  flags.Add({"max-group-size", "N", "size",
             [v](std::string_view s) { return ParseUint32(s, &v->size); }});
  flags.Add({"listen-address", "ADDR", "address", [v](std::string_view s) {
               v->address = std::string(s);
               return absl::OkStatus();
             }});
  flags.Add(
      {"verbose", "", "chatty", [v](std::string_view s) { return ParseBool(s, &v->verbose); }});
  return flags;
}

TEST(Flags, ParsesBothFormsSwitchesAndPositionals) {
  Values v;
  const std::vector<std::string> args = {
      "--max-message-bytes=1024", "--listen-address", "unix:/x", "--verbose", "file", "--",
      "--max-group-size"};
  absl::StatusOr<ParsedFlags> parsed = MakeFlags(&v).Parse(args);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->ApplyAll().ok());
  EXPECT_EQ(v.bytes, 1024u);
  EXPECT_EQ(v.address, "unix:/x");
  EXPECT_TRUE(v.verbose);
  EXPECT_EQ(v.size, 0u);
  EXPECT_THAT(parsed->positional(), ElementsAre("file", "--max-group-size"));
}

TEST(Flags, TheLastValueWinsAndSkippedFlagsAreNotApplied) {
  Values v;
  const std::vector<std::string> args = {"--max-group-size=1", "--max-group-size=2",
                                         "--max-message-bytes=7"};
  absl::StatusOr<ParsedFlags> parsed = MakeFlags(&v).Parse(args);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->Get("max-group-size"), "2");
  const std::string_view skip[] = {"max-message-bytes"};
  ASSERT_TRUE(parsed->ApplyAll(skip).ok());
  EXPECT_EQ(v.size, 2u);
  EXPECT_EQ(v.bytes, 0u);
}

TEST(Flags, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--max-grup-size=3"}, "unknown flag --max-grup-size"},
      {{"--max-group-size"}, "--max-group-size needs a value"},
      {{"--max-group-size=abc"}, "--max-group-size: \"abc\" is not a non-negative integer"},
      {{"--max-group-size=-1"}, "--max-group-size: \"-1\" is not a non-negative integer"},
      {{"--max-group-size=4294967296"}, "--max-group-size: 4294967296 is above 4294967295"},
      {{"--verbose=maybe"}, "--verbose: \"maybe\" is not true or false"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    Values v;
    absl::StatusOr<ParsedFlags> parsed = MakeFlags(&v).Parse(c.args);
    absl::Status status = parsed.ok() ? parsed->ApplyAll() : parsed.status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(Flags, UsageListsEveryFlag) {
  Values v;
  const std::string usage = MakeFlags(&v).Usage();
  EXPECT_THAT(usage, HasSubstr("Usage: rlscore test [flags]"));
  EXPECT_THAT(usage, HasSubstr("--max-message-bytes=N"));
  EXPECT_THAT(usage, HasSubstr("--verbose"));
}

}  // namespace
}  // namespace rlscore::cli
