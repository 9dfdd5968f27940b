#include "engine/config.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rlscore/config/v1/server_config.pb.h"

namespace rlscore::engine {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// What a profile's hash covers, decoded.
config::v1::Profile Canonical(const ServiceProfile& profile) {
  config::v1::Profile content;
  EXPECT_TRUE(content.ParseFromString(profile.canonical));
  return content;
}

TEST(Config, DefaultsAreTheBuiltInConfiguration) {
  const ServerOptions options = DefaultServerOptions();
  EXPECT_EQ(options.listen_address, "127.0.0.1:50051");
  EXPECT_EQ(options.metrics_address, "127.0.0.1:9464");
  EXPECT_EQ(options.drain_timeout, absl::Seconds(30));
  EXPECT_EQ(options.advantage.estimator, advantage::Estimator::kGrpo);
  EXPECT_EQ(options.advantage.deviation, advantage::Deviation::kSample);
  EXPECT_EQ(options.advantage.zero_variance_threshold, 1e-8);
  EXPECT_TRUE(ValidateServerOptions(options).ok());
}

TEST(Config, FileOverridesOnlyWhatItSets) {
  ServerOptions options = DefaultServerOptions();
  const absl::Status status =
      ApplyConfigText(R"pb(
                        listen_address: "unix:/run/rlscore.sock"
                        limits { max_group_size: 4096 }
                        drain_timeout_secs: 5
                        advantage { estimator: ESTIMATOR_DR_GRPO zero_variance_threshold: 1e-6 }
                      )pb",
                      "server.textproto", &options);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(options.listen_address, "unix:/run/rlscore.sock");
  EXPECT_EQ(options.metrics_address, "127.0.0.1:9464");
  EXPECT_EQ(options.limits.max_group_size, 4096u);
  EXPECT_EQ(options.limits.max_groups_per_request,
            DefaultServerOptions().limits.max_groups_per_request);
  EXPECT_EQ(options.drain_timeout, absl::Seconds(5));
  EXPECT_EQ(options.advantage.estimator, advantage::Estimator::kDrGrpo);
  EXPECT_EQ(options.advantage.deviation, advantage::Deviation::kSample);
  EXPECT_EQ(options.advantage.zero_variance_threshold, 1e-6);
}

TEST(Config, AnEmptyMetricsAddressDisablesMetrics) {
  ServerOptions options = DefaultServerOptions();
  ASSERT_TRUE(ApplyConfigText("metrics_address: \"\"", "f", &options).ok());
  EXPECT_EQ(options.metrics_address, "");
}

TEST(Config, ErrorsNameTheFileLineAndColumn) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"listen_address: \"a:1\"\nlisten: \"b\"\n", "server.textproto:2:"},
      {"limits { max_group_size: -3 }", "server.textproto:1:"},
      {"advantage { estimator: ESTIMATOR_NOPE }", "ESTIMATOR_NOPE"},
      {"drain_timeout_secs: \"x\"", "server.textproto:1:"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    ServerOptions options = DefaultServerOptions();
    const absl::Status status = ApplyConfigText(c.text, "server.textproto", &options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(Config, ValidationNamesTheField) {
  struct Case {
    const char* name;
    void (*edit)(ServerOptions*);
    const char* message;
  };
  const Case cases[] = {
      {"empty listen", [](ServerOptions* o) { o->listen_address = ""; }, "listen_address"},
      {"message too big", [](ServerOptions* o) { o->limits.max_message_bytes = 1ull << 32; },
       "limits.max_message_bytes"},
      {"zero groups", [](ServerOptions* o) { o->limits.max_groups_per_request = 0; },
       "limits.max_groups_per_request"},
      {"zero group size", [](ServerOptions* o) { o->limits.max_group_size = 0; },
       "limits.max_group_size"},
      {"bad tau", [](ServerOptions* o) { o->advantage.zero_variance_threshold = -1; },
       "advantage.zero_variance_threshold"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServerOptions options = DefaultServerOptions();
    c.edit(&options);
    const absl::Status status = ValidateServerOptions(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(Config, NewLimitsAndTlsAreReadAndValidated) {
  ServerOptions options = DefaultServerOptions();
  ASSERT_TRUE(
      ApplyConfigText(R"pb(
                        limits {
                          max_completion_tokens: 1000
                          max_references: 5
                          max_reference_bytes: 100
                          max_concurrent_calls: 7
                          max_streams: 9
                          memory_budget_bytes: 123456789
                        }
                        tls { cert_file: "/c.pem" key_file: "/k.pem" client_ca_file: "/ca.pem" }
                      )pb",
                      "server.textproto", &options)
          .ok());
  EXPECT_EQ(options.limits.max_completion_tokens, 1000u);
  EXPECT_EQ(options.limits.max_references, 5u);
  EXPECT_EQ(options.limits.max_reference_bytes, 100u);
  EXPECT_EQ(options.limits.max_concurrent_calls, 7u);
  EXPECT_EQ(options.limits.max_streams, 9u);
  EXPECT_EQ(options.limits.memory_budget_bytes, 123456789u);
  EXPECT_THAT(ToConfigText(options), HasSubstr("memory_budget_bytes: 123456789"));
  EXPECT_TRUE(options.tls.enabled());
  EXPECT_EQ(options.tls.client_ca_file, "/ca.pem");
  EXPECT_FALSE(options.tls.require_client_cert);
  EXPECT_TRUE(ValidateServerOptions(options).ok());

  ServerOptions bad = options;
  bad.tls.key_file.clear();
  EXPECT_THAT(std::string(ValidateServerOptions(bad).message()), HasSubstr("go together"));
  bad = options;
  bad.tls.client_ca_file.clear();
  bad.tls.require_client_cert = true;
  EXPECT_THAT(std::string(ValidateServerOptions(bad).message()), HasSubstr("needs client_ca_file"));
  bad = DefaultServerOptions();
  bad.tls.require_client_cert = true;
  EXPECT_THAT(std::string(ValidateServerOptions(bad).message()),
              HasSubstr("need cert_file and key_file"));
  bad = DefaultServerOptions();
  bad.limits.max_streams = 0;
  EXPECT_THAT(std::string(ValidateServerOptions(bad).message()), HasSubstr("max_streams"));
  bad = DefaultServerOptions();
  EXPECT_EQ(bad.limits.memory_budget_bytes, uint64_t{2} << 30);
  bad.limits.memory_budget_bytes = 0;
  EXPECT_THAT(std::string(ValidateServerOptions(bad).message()),
              HasSubstr("limits.memory_budget_bytes must be at least 1"));
}

// A value that parses but is refused names the line of the file that set it, whether the file
// itself refuses it (a profile) or the check after the flags does (a limit, TLS, run health).
TEST(Config, RefusedValuesNameTheLineOfTheirSetting) {
  struct Case {
    const char* text;
    const char* where;
    const char* message;
  };
  const Case cases[] = {
      {"listen_address: \"127.0.0.1:0\"\nlimits {\n  max_group_size: 0\n}\n",
       "server.textproto:3:3: ", "limits.max_group_size must be at least 1"},
      {"limits {\n  max_streams: 7\n  max_message_bytes: 0\n}\n",
       "server.textproto:3:3: ", "limits.max_message_bytes is 0"},
      {"\n\ntls {\n  require_client_cert: true\n}\n",
       "server.textproto:4:3: ", "need cert_file and key_file"},
      {"drain_timeout_secs: 90000\n", "server.textproto:1:1: ", "drain_timeout_secs must be"},
      {"gpu { mode: \"sometimes\" }\n", "server.textproto:1:7: ", "gpu.mode (--gpu) must be"},
      {"run_health {\n  recent_batches: 0\n}\n",
       "server.textproto:2:3: ", "run_health.recent_batches must be at least 1"},
      // The advantage block and a profile are checked as a whole: the line of their block.
      {"\nadvantage {\n  zero_variance_threshold: -1\n}\n",
       "server.textproto:2:1: ", "advantage: zero_variance_threshold must be finite"},
      {"profiles { name: \"a\" }\nprofiles {\n  name: \"p\"\n  repetition { ast { "
       "parse_timeout_micros: 0 } }\n}\n",
       "server.textproto:2:1: ", "profile \"p\": repetition.ast.parse_timeout_micros"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    ServerOptions options = DefaultServerOptions();
    ConfigLocations in_file;
    absl::Status status = ApplyConfigText(c.text, "server.textproto", &options, &in_file);
    if (status.ok()) status = in_file.Locate(ValidateServerOptions(options), options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), ::testing::StartsWith(c.where));
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(Config, AValueAFlagReplacedIsNotBlamedOnTheFile) {
  ServerOptions options = DefaultServerOptions();
  ConfigLocations in_file;
  ASSERT_TRUE(ApplyConfigText("limits {\n  max_message_bytes: 4096\n}\n", "server.textproto",
                              &options, &in_file)
                  .ok());
  EXPECT_EQ(in_file.Find("limits.max_message_bytes", options), "server.textproto:2:3");
  EXPECT_EQ(in_file.Find("limits.max_group_size", options), std::nullopt);  // not in the file
  options.limits.max_message_bytes = 1ull << 40;                            // --max-message-bytes
  const absl::Status status = in_file.Locate(ValidateServerOptions(options), options);
  EXPECT_EQ(SettingOf(status), "limits.max_message_bytes");
  EXPECT_THAT(std::string(status.message()), ::testing::StartsWith("limits.max_message_bytes is"));
  EXPECT_TRUE(in_file.Locate(absl::OkStatus(), options).ok());
}

TEST(Config, MissingFileIsNotFoundNamingThePath) {
  ServerOptions options = DefaultServerOptions();
  const absl::Status status = ApplyConfigFile("/nonexistent/rlscore.textproto", &options);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("/nonexistent/rlscore.textproto"));
}

TEST(Config, FileRoundTripsThroughItsTextForm) {
  ServerOptions options = DefaultServerOptions();
  options.listen_address = "[::]:6000";
  options.limits.max_message_bytes = 1 << 20;
  options.advantage.estimator = advantage::Estimator::kBatchNormalized;
  options.advantage.deviation = advantage::Deviation::kPopulation;
  options.gpu.mode = "off";
  options.gpu.min_rewards = 1 << 20;
  options.run_health.truncation_warn = 0.2;
  options.run_health.recent_batches = 8;
  const std::string path = ::testing::TempDir() + "rlscore-config-test.textproto";
  std::ofstream(path) << ToConfigText(options);

  ServerOptions loaded = DefaultServerOptions();
  ASSERT_TRUE(ApplyConfigFile(path, &loaded).ok());
  EXPECT_EQ(loaded.listen_address, "[::]:6000");
  EXPECT_EQ(loaded.limits.max_message_bytes, 1u << 20);
  EXPECT_EQ(loaded.advantage.estimator, advantage::Estimator::kBatchNormalized);
  EXPECT_EQ(loaded.advantage.deviation, advantage::Deviation::kPopulation);
  EXPECT_EQ(loaded.gpu.mode, "off");
  EXPECT_EQ(loaded.gpu.min_rewards, 1u << 20);
  EXPECT_EQ(loaded.run_health.truncation_warn, 0.2);
  EXPECT_EQ(loaded.run_health.recent_batches, 8u);
  EXPECT_EQ(ToConfigText(loaded), ToConfigText(options));
}

TEST(Config, RunHealthThresholdsAreAppliedAndValidated) {
  ServerOptions options = DefaultServerOptions();
  ASSERT_TRUE(ApplyConfigText("run_health { repetition_warn: 0.05 repetition_critical: 0.2 }",
                              "health.textproto", &options)
                  .ok());
  EXPECT_EQ(options.run_health.repetition_warn, 0.05);
  EXPECT_EQ(options.run_health.repetition_critical, 0.2);
  EXPECT_EQ(options.run_health.truncation_warn, HealthThresholds{}.truncation_warn);  // untouched
  EXPECT_TRUE(ValidateServerOptions(options).ok());

  options.run_health.repetition_warn = 0.5;  // above its critical threshold
  const absl::Status status = ValidateServerOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("run_health.repetition_warn"));
}

}  // namespace
}  // namespace rlscore::engine

namespace rlscore::engine {
namespace {

TEST(Profiles, TheBuiltInDefaultIsSpecSection1) {
  const ServerOptions options = DefaultServerOptions();
  absl::StatusOr<const ServiceProfile*> found = options.profiles.Find("");
  ASSERT_TRUE(found.ok());
  const scorers::Profile& p = (*found)->reward;
  EXPECT_EQ(p.name, "default");
  EXPECT_EQ(p.task, scorers::Task::kMath);
  EXPECT_EQ(p.format.reward, 0.1);
  EXPECT_FALSE(p.format.ungated);
  EXPECT_EQ(p.repetition.penalty, -0.5);
  EXPECT_EQ(p.repetition.ngram.n, 8u);
  EXPECT_EQ(p.repetition.ngram.max_occurrences, 3u);
  // The AST rules (docs/REPETITION.md) are part of the default repetition component.
  EXPECT_TRUE(p.repetition.ast.enabled);
  EXPECT_EQ(p.repetition.ast.block_max_occurrences, 3u);
  EXPECT_EQ(p.repetition.ast.code_max_occurrences, 3u);
  for (bool on : p.repetition.ast.languages) EXPECT_TRUE(on);
  EXPECT_EQ(p.length.shape, scorers::LengthShape::kQuadratic);
  EXPECT_EQ(p.length.weight, 0.5);
  EXPECT_EQ(p.length.target, 4096u);
  EXPECT_EQ(p.length.max, 16384u);
  EXPECT_EQ((*found)->hash.size(), 16u);
}

TEST(Profiles, FileProfilesOverrideTheDefaultsAndHashTheirContent) {
  ServerOptions options = DefaultServerOptions();
  const absl::Status status = ApplyConfigText(
      R"pb(
        profiles {
          name: "dapo"
          task: TASK_NUMERIC
          tags { think_prefilled: true }
          length { shape: SHAPE_DAPO_OVERLONG max_tokens: 8192 dapo_buffer_tokens: 1024 }
          advantage { estimator: ESTIMATOR_DR_GRPO }
        }
        profiles {
          name: "dapo2"
          length { shape: SHAPE_DAPO_OVERLONG max_tokens: 8192 dapo_buffer_tokens: 1024 }
        }
      )pb",
      "server.textproto", &options);
  ASSERT_TRUE(status.ok()) << status;
  const ServiceProfile* dapo = options.profiles.Find("dapo").value();
  EXPECT_EQ(dapo->reward.task, scorers::Task::kNumeric);
  EXPECT_TRUE(dapo->reward.tags.think_prefilled);
  EXPECT_EQ(dapo->reward.length.shape, scorers::LengthShape::kDapoOverlong);
  EXPECT_EQ(dapo->reward.length.dapo_buffer, 1024u);
  EXPECT_EQ(dapo->reward.format.reward, 0.1);  // unset: the default
  EXPECT_EQ(dapo->advantage.estimator, advantage::Estimator::kDrGrpo);
  const std::string& default_hash = options.profiles.Find("default").value()->hash;
  EXPECT_NE(dapo->hash, default_hash);
  EXPECT_NE(dapo->hash, options.profiles.Find("dapo2").value()->hash);
  // The same content gives the same hash, whatever the process.
  EXPECT_EQ(default_hash, DefaultProfiles(advantage::Options{}).Find("default").value()->hash);
}

TEST(Profiles, NewEstimatorsAndTheKeepBandComeFromTheConfig) {
  ServerOptions options = DefaultServerOptions();
  const absl::Status status = ApplyConfigText(
      R"pb(
        profiles {
          name: "gdpo"
          advantage {
            estimator: ESTIMATOR_GDPO
            keep_band { lo: 0.125 hi: 0.875 }
          }
        }
        profiles {
          name: "passk"
          advantage { estimator: ESTIMATOR_GRPO_PASSK }
        }
      )pb",
      "server.textproto", &options);
  ASSERT_TRUE(status.ok()) << status;
  const ServiceProfile* gdpo = options.profiles.Find("gdpo").value();
  EXPECT_EQ(gdpo->advantage.estimator, advantage::Estimator::kGdpo);
  EXPECT_TRUE(gdpo->advantage.keep_band.enabled);
  EXPECT_EQ(gdpo->advantage.keep_band.lo, 0.125);
  EXPECT_EQ(gdpo->advantage.keep_band.hi, 0.875);
  const ServiceProfile* passk = options.profiles.Find("passk").value();
  EXPECT_EQ(passk->advantage.estimator, advantage::Estimator::kGrpoPassK);
  EXPECT_FALSE(passk->advantage.keep_band.enabled);
  EXPECT_NE(gdpo->hash, passk->hash);

  ServerOptions bad = DefaultServerOptions();
  const absl::Status refused =
      ApplyConfigText("profiles { name: \"b\" advantage { keep_band { lo: 0.9 hi: 0.1 } } }",
                      "server.textproto", &bad);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("keep_band must have finite lo <= hi"));
}

TEST(Profiles, AstRepetitionOptions) {
  ServerOptions options = DefaultServerOptions();
  const absl::Status status = ApplyConfigText(
      R"pb(
        profiles {
          name: "code"
          repetition {
            ast {
              min_block_chars: 100
              block_max_occurrences: 5
              code_max_occurrences: 2
              min_code_nodes: 25
              languages: "cpp"
              languages: "python"
              max_parse_bytes: 65536
              parse_timeout_micros: 5000
              max_nodes: 20000
            }
          }
        }
        profiles {
          name: "no_ast"
          repetition { ast { enabled: false } }
        }
      )pb",
      "server.textproto", &options);
  ASSERT_TRUE(status.ok()) << status;
  const ServiceProfile* code = options.profiles.Find("code").value();
  const scorers::ast::AstOptions& ast = code->reward.repetition.ast;
  EXPECT_TRUE(ast.enabled);
  EXPECT_EQ(ast.min_block_chars, 100u);
  EXPECT_EQ(ast.block_max_occurrences, 5u);
  EXPECT_EQ(ast.code_max_occurrences, 2u);
  EXPECT_EQ(ast.min_code_nodes, 25u);
  EXPECT_EQ(ast.max_parse_bytes, 65536u);
  EXPECT_EQ(ast.parse_timeout_micros, 5000u);
  EXPECT_EQ(ast.max_nodes, 20000u);
  using scorers::ast::CodeLanguage;
  EXPECT_TRUE(ast.languages[static_cast<size_t>(CodeLanguage::kPython)]);
  EXPECT_TRUE(ast.languages[static_cast<size_t>(CodeLanguage::kCpp)]);
  EXPECT_FALSE(ast.languages[static_cast<size_t>(CodeLanguage::kC)]);
  EXPECT_FALSE(ast.languages[static_cast<size_t>(CodeLanguage::kJavaScript)]);
  // The options are part of the profile's content, and so of its hash.
  const config::v1::Profile code_content = Canonical(*code);
  EXPECT_EQ(code_content.repetition().ast().min_code_nodes(), 25u);
  EXPECT_THAT(code_content.repetition().ast().languages(), UnorderedElementsAre("python", "cpp"));
  const ServiceProfile* off = options.profiles.Find("no_ast").value();
  EXPECT_FALSE(off->reward.repetition.ast.enabled);
  EXPECT_NE(off->hash, options.profiles.Find("default").value()->hash);
}

// The n-gram rule is chosen by name; the literal rule and the loop rule's numbers are part of
// the profile's content, and so of its hash.
TEST(Profiles, NgramRuleOptions) {
  ServerOptions options = DefaultServerOptions();
  const absl::Status status = ApplyConfigText(
      R"pb(
        profiles {
          name: "literal"
          repetition { ngram_rule: NGRAM_RULE_LITERAL }
        }
        profiles {
          name: "tight_loop"
          repetition {
            loop_window: 100
            loop_min_recurring_percent: 80
            loop_recurrence_distance: 300
            max_number_run: 0
            max_reasoning_tags: 9
          }
        }
      )pb",
      "server.textproto", &options);
  ASSERT_TRUE(status.ok()) << status;
  const ServiceProfile* defaults = options.profiles.Find("default").value();
  EXPECT_EQ(defaults->reward.repetition.ngram.rule, scorers::NgramRule::kLoop);
  const config::v1::Profile default_content = Canonical(*defaults);
  EXPECT_EQ(default_content.repetition().ngram_rule(),
            config::v1::RepetitionPenalty::NGRAM_RULE_LOOP);
  EXPECT_EQ(default_content.repetition().loop_window(), 200u);
  const ServiceProfile* literal = options.profiles.Find("literal").value();
  EXPECT_EQ(literal->reward.repetition.ngram.rule, scorers::NgramRule::kLiteral);
  EXPECT_EQ(Canonical(*literal).repetition().ngram_rule(),
            config::v1::RepetitionPenalty::NGRAM_RULE_LITERAL);
  EXPECT_NE(literal->hash, defaults->hash);
  const scorers::NgramOptions& tight =
      options.profiles.Find("tight_loop").value()->reward.repetition.ngram;
  EXPECT_EQ(tight.window, 100u);
  EXPECT_EQ(tight.min_recurring_percent, 80u);
  EXPECT_EQ(tight.recurrence_distance, 300u);
  EXPECT_EQ(tight.max_number_run, 0u);
  EXPECT_EQ(options.profiles.Find("tight_loop").value()->reward.repetition.max_reasoning_tags, 9u);
  EXPECT_EQ(default_content.repetition().max_reasoning_tags(), 4u);
  EXPECT_NE(options.profiles.Find("tight_loop").value()->hash, defaults->hash);

  ServerOptions bad = DefaultServerOptions();
  const absl::Status refused = ApplyConfigText(R"pb(profiles {
                                                      name: "p"
                                                      repetition { loop_min_recurring_percent: 0 }
                                                    })pb",
                                               "server.textproto", &bad);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("repetition.loop_min_recurring_percent"));
}

TEST(Profiles, InstructionFollowingOptionsComeFromTheConfigAndEnterTheHash) {
  ServerOptions options = DefaultServerOptions();
  const absl::Status status = ApplyConfigText(
      R"pb(
        profiles {
          name: "ifeval"
          task: TASK_INSTRUCTION_FOLLOWING
          instruction_following { fraction: true loose: true }
        }
        profiles { name: "strict" task: TASK_INSTRUCTION_FOLLOWING }
        profiles {
          name: "strict-spelled-out"
          task: TASK_INSTRUCTION_FOLLOWING
          instruction_following { fraction: false loose: false }
        }
      )pb",
      "server.textproto", &options);
  ASSERT_TRUE(status.ok()) << status;
  const ServiceProfile* ifeval = options.profiles.Find("ifeval").value();
  EXPECT_EQ(ifeval->reward.task, scorers::Task::kInstructionFollowing);
  EXPECT_TRUE(ifeval->reward.instructions.fraction);
  EXPECT_TRUE(ifeval->reward.instructions.loose);
  const ServiceProfile* strict = options.profiles.Find("strict").value();
  EXPECT_FALSE(strict->reward.instructions.fraction);
  EXPECT_FALSE(strict->reward.instructions.loose);
  // The choice is part of the profile's hash; spelling out the defaults is no choice (and keeps
  // the hashes of profiles written before the IF task).
  const ServiceProfile* spelled = options.profiles.Find("strict-spelled-out").value();
  EXPECT_NE(ifeval->hash, strict->hash);
  config::v1::Profile a;
  config::v1::Profile b;
  ProfileToProto(*strict, &a);
  ProfileToProto(*spelled, &b);
  a.clear_name();
  b.clear_name();
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
  EXPECT_FALSE(a.has_instruction_following());
}

TEST(Profiles, InvalidProfilesAreRefusedNamingProfileAndField) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"profiles { name: \"p\" length { target_tokens: 9000 max_tokens: 8000 } }",
       "profile \"p\": length.target_tokens (9000) must be below length.max_tokens (8000)"},
      {"profiles { name: \"p\" repetition { penalty: 0.5 } }",
       "profile \"p\": repetition.penalty must be finite and <= 0"},
      {"profiles { name: \"p\" repetition { ngram_size: 0 } }", "repetition.ngram_size"},
      {"profiles { name: \"p\" length { shape: SHAPE_DAPO_OVERLONG dapo_buffer_tokens: 0 } }",
       "length.dapo_buffer_tokens"},
      {"profiles { name: \"p\" task: TASK_EXTERNAL }", "profile \"p\": task"},
      {"profiles { name: \"p\" weights { format: nan } }", "weights.format must be finite"},
      {"profiles { name: \"p\" repetition { ast { languages: \"python\" languages: \"rust\" } } }",
       "profile \"p\": repetition.ast.languages[1]: unknown language \"rust\""},
      {"profiles { name: \"p\" repetition { ast { min_code_nodes: 1 } } }",
       "repetition.ast.min_code_nodes"},
      {"profiles { name: \"p\" repetition { ast { parse_timeout_micros: 0 } } }",
       "profile \"p\": repetition.ast.parse_timeout_micros must be at least 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    ServerOptions options = DefaultServerOptions();
    const absl::Status status = ApplyConfigText(c.text, "server.textproto", &options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace rlscore::engine
