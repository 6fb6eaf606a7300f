// libFuzzer target for reading an HTTP response off the wire (core/http_response.hpp):
// the Beast parser with kstate's limits, the conversion to a Response, and the Status
// decoding of a non-2xx answer, as the transport does them. The first byte chooses how
// many bytes each "read" hands the parser (1..255, or 0: all at once), the second the
// body limit (1 KiB << (byte % 8)); the rest is what the server sent. Besides the
// sanitizers' findings it checks the reader's promises: a body never exceeds the
// limit, a status is three digits, a refused answer says why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/http_response.hpp"

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
  const std::size_t piece = data[0];
  const std::size_t limit = std::size_t{1024} << (data[1] % 8);
  std::string_view wire(reinterpret_cast<const char*>(data) + 2, size - 2);
  auto parsed = kstate::parse_http_response(wire, limit, piece);
  if (!parsed) {
    require(!parsed.error().message.empty());
    require(parsed.error().kind == kstate::ErrorKind::unsupported ||
            parsed.error().kind == kstate::ErrorKind::connection || parsed.error().kind == kstate::ErrorKind::internal);
    return 0;
  }
  require(parsed->status >= 0 && parsed->status <= 999);  // three digits (Beast takes "000" too)
  require(parsed->body.size() <= limit);
  for (const auto& [name, value] : parsed->headers) {
    for (char c : name) {
      require(!(c >= 'A' && c <= 'Z'));
    }
  }
  if (parsed->status >= 300 && parsed->status != 304) {
    auto error = kstate::error_from_response(parsed->status, parsed->body, parsed->header("retry-after"));
    require(!error.message.empty());
  }
  return 0;
}
