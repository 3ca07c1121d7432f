// The decoder table (capture/decoder.h): chosen by well-known port, else by
// content probe in this order (most specific first, "generic" last), else
// forced by the user. Zeek's analyzer plugins register the same way.
#include <vector>

#include "capture/decoder.h"
#include "capture/decoders/decoders.h"

namespace bbprof::capture {

std::span<const DecoderInfo> AllDecoders() {
  static const std::vector<DecoderInfo>* const kAll =
      new std::vector<DecoderInfo>{
          RpcDecoderInfo(), DnsDecoderInfo(), Http2DecoderInfo(),
          HttpDecoderInfo(), RedisDecoderInfo(), MemcachedDecoderInfo(),
          PostgresDecoderInfo(), MysqlDecoderInfo(),
          // No ports and no probe: chosen by name only.
          Http2EndStreamDecoderInfo(), GenericDecoderInfo()};
  return *kAll;
}

const DecoderInfo* FindDecoder(std::string_view name) {
  for (const DecoderInfo& d : AllDecoders()) {
    if (name == d.name) {
      return &d;
    }
  }
  return nullptr;
}

}  // namespace bbprof::capture
