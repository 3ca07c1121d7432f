#include "trace/op.h"

#include <cstdio>

#include "trace/token.h"

namespace bbprof::trace {

namespace {

bool Reserved(unsigned char u) {
  return u <= 0x20 || u == 0x7f || u == '(' || u == ')' || u == ',' || u == ';';
}

// MakeOp also escapes every non-ASCII byte (a URL or statement may hold any
// bytes, and an op must be valid UTF-8 like every token of the format), and
// '[' and ']': legal in a token, but they delimit an op in a path signature
// (`app[http:GET:/x]`, nesting/), so encoded an op never holds them and a
// signature's ops read back unambiguously.
bool Escaped(unsigned char u) {
  return Reserved(u) || u == '%' || u >= 0x80 || u == '[' || u == ']';
}

}  // namespace

std::string CheckOpToken(std::string_view op) {
  if (op.empty()) return "empty op";
  if (op == "-") return "'-' is the absent op, not an op";
  if (op.size() > kMaxOpBytes) {
    return "op longer than " + std::to_string(kMaxOpBytes) + " bytes";
  }
  for (char c : op) {
    auto u = static_cast<unsigned char>(c);
    if (Reserved(u)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", u);
      return std::string(
                 "op contains whitespace, a control byte or one of "
                 "'( ) , ;' (byte ") +
             hex + ")";
    }
  }
  if (!IsValidUtf8(op)) return "op is not valid UTF-8";
  return {};
}

std::string MakeOp(std::initializer_list<std::string_view> parts) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  bool cut = false;
  for (std::string_view part : parts) {
    if (part.empty() || cut) continue;
    if (!out.empty()) {
      if (out.size() + 1 > kMaxOpBytes - 1) {
        cut = true;
        break;
      }
      out.push_back(':');
    }
    for (char c : part) {
      auto u = static_cast<unsigned char>(c);
      bool escape = Escaped(u);
      // Keep one byte for the '~' that marks a cut name.
      if (out.size() + (escape ? 3 : 1) > kMaxOpBytes - 1) {
        cut = true;
        break;
      }
      if (escape) {
        out.push_back('%');
        out.push_back(kHex[u >> 4]);
        out.push_back(kHex[u & 15]);
      } else {
        out.push_back(c);
      }
    }
  }
  if (cut) out.push_back('~');
  if (out == "-") out = "%2D";
  return out;
}

}  // namespace bbprof::trace
