// libFuzzer target for Status decoding (core/response.hpp): the body of any non-2xx
// API server response, plus the HTTP status and Retry-After header it came with. The
// first two bytes choose the HTTP status (400..599 mostly, any value sometimes), the
// bytes up to the first newline after them are the Retry-After value, the rest is the
// body. Besides the sanitizers' findings it checks the decoder's promises: the message
// is never empty, the kind follows the HTTP status, describe() is printable, the
// message holds no control character and is capped.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/response.hpp"
#include "core/untrusted_text.hpp"

namespace {

void require(bool condition) {
  if (!condition) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) {
    return 0;
  }
  int code = (data[0] << 8) | data[1];
  int http_status = code & 0x8000 ? code - 0x8000 : 400 + code % 200;
  std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  auto newline = rest.find('\n');
  std::string_view retry_after = newline == std::string_view::npos ? std::string_view() : rest.substr(0, newline);
  std::string_view body = newline == std::string_view::npos ? rest : rest.substr(newline + 1);

  auto error = kstate::error_from_response(http_status, body, retry_after);
  require(!error.message.empty());
  require(error.http_status == http_status);
  require(error.kind == kstate::error_kind_of(http_status, error.reason));
  require(error.retry_after_seconds >= -1);
  require(!error.describe().empty());
  // Server text is escaped and capped (untrusted_text.hpp): no control character, a
  // few kB at most.
  for (char c : error.message) {
    require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
  }
  require(error.message.size() <= kstate::max_server_message_bytes + 64);
  return 0;
}
