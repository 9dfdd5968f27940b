#include "engine/protobuf_log.h"

#include <google/protobuf/stubs/logging.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace rlscore::engine {

void AppendToCapture(const std::string& line);  // the header's friend

namespace {

thread_local ProtobufLogCapture* current = nullptr;

void Handle(google::protobuf::LogLevel level, const char* filename, int line,
            const std::string& message) {
  if (current != nullptr) {
    AppendToCapture(message);
    return;
  }
  const LogLevel ours = level >= google::protobuf::LOGLEVEL_ERROR     ? LogLevel::kError
                        : level == google::protobuf::LOGLEVEL_WARNING ? LogLevel::kWarning
                                                                      : LogLevel::kInfo;
  Log(ours, absl::StrCat("protobuf (", filename, ":", line, "): ", message));
}

}  // namespace

void AppendToCapture(const std::string& line) {
  std::string& text = current->text_;
  if (text.size() >= ProtobufLogCapture::kMaxBytes) return;  // already ends with "..."
  if (!text.empty()) text += "; ";
  const absl::string_view trimmed = absl::StripAsciiWhitespace(line);
  text.append(trimmed.data(), trimmed.size());
  if (text.size() > ProtobufLogCapture::kMaxBytes) {
    text.resize(ProtobufLogCapture::kMaxBytes - 3);
    text += "...";
  }
}

ProtobufLogCapture::ProtobufLogCapture() : outer_(current) {
  static const bool installed = [] {
    google::protobuf::SetLogHandler(&Handle);
    return true;
  }();
  (void)installed;
  current = this;
}

ProtobufLogCapture::~ProtobufLogCapture() { current = outer_; }

}  // namespace rlscore::engine
