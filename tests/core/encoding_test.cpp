// base64 as kstate reads it (core/encoding.hpp): Go's StdEncoding for YAML's !!binary,
// with any white space allowed where a kubeconfig's folded *-data field may hold it.
#include "core/encoding.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

namespace encoding_test {

using kstate::encoding::base64_decode;
using kstate::encoding::base64_encode;
using kstate::encoding::Base64Spacing;

TEST_CASE("base64 decodes what Go's StdEncoding decodes, and refuses what it refuses", "[encoding]") {
  struct Case {
    const char* text;
    Base64Spacing spacing;
    std::optional<std::string> expected;
  };
  const Case cases[] = {
      {"aGVsbG8=", Base64Spacing::line_breaks, "hello"},
      {"aGVs\r\nbG8=\n", Base64Spacing::line_breaks, "hello"},
      {"", Base64Spacing::line_breaks, ""},
      {"aGVs bG8=", Base64Spacing::line_breaks, std::nullopt},  // Go ignores only CR and LF
      {"aGVs bG8=", Base64Spacing::any, "hello"},
      {"aGVsbG8", Base64Spacing::any, std::nullopt},       // padding missing
      {"aG=sbG8=", Base64Spacing::any, std::nullopt},      // '=' inside
      {"aGVsbG8=QQ==", Base64Spacing::any, std::nullopt},  // data after the padding
      {"aGVs*G8=", Base64Spacing::any, std::nullopt},      // outside the alphabet
      {"aGVsbA==", Base64Spacing::any, "hell"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(base64_decode(c.text, c.spacing) == c.expected);
  }
  const std::string bytes("\x00\xff\x10 binary", 10);
  CHECK(base64_decode(base64_encode(bytes)) == bytes);
}

}  // namespace encoding_test
