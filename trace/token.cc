#include "trace/token.h"

#include <cstdio>

namespace bbprof::trace {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if the bytes
// there are not one (RFC 3629, table 3-7 of the Unicode standard).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;  // range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (b(k) < 0x80 || b(k) > 0xbf) return 0;
  }
  return len;
}

const char* KindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kNodeName:
      return "node name";
    case TokenKind::kCallid:
      return "callid";
    case TokenKind::kPathid:
      return "pathid";
    case TokenKind::kOp:
      return "op";
  }
  return "token";
}

std::string HexByte(unsigned char u) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", u);
  return hex;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string CheckToken(std::string_view s, TokenKind kind) {
  const char* what = KindName(kind);
  const bool node = kind == TokenKind::kNodeName;
  const bool reserved = node || kind == TokenKind::kOp;
  if (s.empty()) return std::string("empty ") + what;
  if (!node && s == "-") {
    return std::string(what) + " '-' (that spelling means unknown)";
  }
  const size_t max = node ? kMaxNodeNameBytes : kMaxTokenBytes;
  if (s.size() > max) {
    return std::string(what) + " " + EscapeForMessage(s) + " is longer than " +
           std::to_string(max) + " bytes";
  }
  bool ascii = true;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return std::string(what) + " " + EscapeForMessage(s) +
             " contains whitespace or control byte " + HexByte(u);
    }
    if (reserved && (c == '(' || c == ')' || c == ',' || c == ';')) {
      return std::string(what) + " " + EscapeForMessage(s) +
             " contains reserved character '" + c + "'";
    }
    ascii &= u < 0x80;
  }
  if (!ascii && !IsValidUtf8(s)) {
    return std::string(what) + " " + EscapeForMessage(s) +
           " is not valid UTF-8";
  }
  return {};
}

std::string EscapeForMessage(std::string_view s, size_t max_bytes) {
  std::string out = "'";
  size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    auto u = static_cast<unsigned char>(s[i]);
    size_t len = u < 0x80 ? 1 : Utf8SequenceLength(s, i);
    if (u < 0x20 || u == 0x7f || len == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  if (i < s.size()) out += "...";
  out += "'";
  return out;
}

}  // namespace bbprof::trace
