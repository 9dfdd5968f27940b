#include "engine/protobuf_log.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rlscore/v1/monitor.pb.h"

namespace rlscore::engine {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A MonitorGenerationRequest whose text delta is the bytes ff fe fd: not UTF-8.
std::string InvalidUtf8Text() { return std::string("\x1a\x05\x0a\x03\xff\xfe\xfd", 7); }

TEST(ProtobufLogCapture, KeepsTheReasonProtobufOnlyLogs) {
  ProtobufLogCapture capture;
  v1::MonitorGenerationRequest request;
  EXPECT_FALSE(request.ParseFromString(InvalidUtf8Text()));
  EXPECT_THAT(capture.text(), HasSubstr("'rlscore.v1.TextDelta.text' contains invalid UTF-8"));
  EXPECT_NE(capture.text().back(), ' ');  // protobuf's trailing space is trimmed
}

TEST(ProtobufLogCapture, AParseThatFailsSilentlyLeavesItEmpty) {
  ProtobufLogCapture capture;
  v1::MonitorGenerationRequest request;
  EXPECT_FALSE(request.ParseFromString(std::string(16, '\xff')));
  EXPECT_THAT(capture.text(), IsEmpty());
}

TEST(ProtobufLogCapture, TheInnermostCaptureKeepsTheLinesAndTheOuterOneResumes) {
  ProtobufLogCapture outer;
  v1::MonitorGenerationRequest request;
  {
    ProtobufLogCapture inner;
    EXPECT_FALSE(request.ParseFromString(InvalidUtf8Text()));
    EXPECT_THAT(inner.text(), HasSubstr("invalid UTF-8"));
  }
  EXPECT_THAT(outer.text(), IsEmpty());
  EXPECT_FALSE(request.ParseFromString(InvalidUtf8Text()));
  EXPECT_THAT(outer.text(), HasSubstr("invalid UTF-8"));
}

TEST(ProtobufLogCapture, IsBoundedWhateverTheInputLogs) {
  ProtobufLogCapture capture;
  v1::MonitorGenerationRequest request;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(request.ParseFromString(InvalidUtf8Text()));
  EXPECT_EQ(capture.text().size(), ProtobufLogCapture::kMaxBytes);
  EXPECT_THAT(capture.text(), ::testing::EndsWith("..."));
}

}  // namespace
}  // namespace rlscore::engine
