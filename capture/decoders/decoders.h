// The registry entries of capture/decoders/, one per protocol (see
// docs/decoders.md). registry.cc lists them in probing order; everything
// else reaches a decoder through capture/decoder.h.
#ifndef BBPROF_CAPTURE_DECODERS_DECODERS_H_
#define BBPROF_CAPTURE_DECODERS_DECODERS_H_

#include <memory>

#include "capture/decoder.h"

namespace bbprof::capture {

DecoderInfo RpcDecoderInfo();
DecoderInfo DnsDecoderInfo();
DecoderInfo HttpDecoderInfo();
DecoderInfo Http2DecoderInfo();
DecoderInfo Http2EndStreamDecoderInfo();
DecoderInfo RedisDecoderInfo();
DecoderInfo MemcachedDecoderInfo();
DecoderInfo PostgresDecoderInfo();
DecoderInfo MysqlDecoderInfo();
DecoderInfo GenericDecoderInfo();

// An HTTP/2 connection decoder, also used by the HTTP/1.x decoder when a
// connection switches to HTTP/2 (prior knowledge on an HTTP port, or an h2c
// upgrade). `upgraded_token` >= 0: the connection was upgraded from HTTP/1.1
// and stream 1 answers the upgrade request, whose call was emitted with that
// token; other streams then use token 0x80000000 | stream id so they cannot
// collide with the HTTP/1.x request indices of the same connection.
// Where an HTTP/2 stream's return is marked (docs/decoders.md).
enum class ReturnAt { kFirstHeaders, kEndStream };
std::unique_ptr<StreamDecoder> MakeHttp2Decoder(
    EventSink& sink, int64_t upgraded_token = -1,
    ReturnAt return_at = ReturnAt::kFirstHeaders);

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_DECODERS_DECODERS_H_
