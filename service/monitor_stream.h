// MonitorGeneration on gRPC: one reactor per stream drives an engine::MonitorSession and answers
// with a single STOP message, after which the stream ends (or no message at all when the client
// half-closes first: nothing fired).
//
//   return NewMonitorStream(options, metrics, &open_streams_, draining_);  // from the handler
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <cstdint>

#include "engine/config.h"
#include "engine/metrics.h"

namespace rlscore::service {

// A reactor that deletes itself when gRPC is done with the stream. `open` counts the streams
// open now (past limits.max_streams a new one is refused at once, RESOURCE_EXHAUSTED); a stream
// that starts while `draining` is refused UNAVAILABLE. `options`, `metrics` and `open` must
// outlive the stream.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewMonitorStream(
    const engine::ServerOptions& options, engine::Metrics* metrics, std::atomic<uint32_t>* open,
    bool draining);

}  // namespace rlscore::service
