// protobuf's log, kept out of the server's stderr. Some reasons a message fails to parse (a
// string field that is not UTF-8) protobuf gives only as a log line, not as a result; written to
// stderr, every such request from a client would add a line in protobuf's own format.
//
//   ProtobufLogCapture capture;
//   if (!message.ParseFromString(bytes)) {
//     return absl::InvalidArgumentError(absl::StrCat("not a valid request: ", capture.text()));
//   }
//
// Lines logged on this thread while a capture lives are kept in it; lines outside any capture go
// to rlscore's log (common/log.h), one line each. The first capture installs the process's
// protobuf log handler (google::protobuf::SetLogHandler).
#pragma once

#include <string>

namespace rlscore::engine {

// Not copyable; lives on one thread's stack. Captures nest: the innermost one keeps the lines.
class ProtobufLogCapture {
 public:
  ProtobufLogCapture();
  ~ProtobufLogCapture();
  ProtobufLogCapture(const ProtobufLogCapture&) = delete;
  ProtobufLogCapture& operator=(const ProtobufLogCapture&) = delete;

  // What protobuf logged so far, "; "-separated, at most kMaxBytes (then "...").
  const std::string& text() const { return text_; }

  static constexpr size_t kMaxBytes = 512;

 private:
  friend void AppendToCapture(const std::string& line);
  std::string text_;
  ProtobufLogCapture* outer_;
};

}  // namespace rlscore::engine
