// Untrusted text made printable: control characters escaped, invalid UTF-8 shown as
// bytes, long text cut at a character boundary with what was left out said.
#include "core/printable.hpp"

#include <catch2/catch.hpp>

namespace printable_test {

using kstate::printable;

TEST_CASE("printable text passes unchanged, UTF-8 included", "[printable]") {
  CHECK(printable(R"(unknown field "metadata.annotation")", 512) == R"(unknown field "metadata.annotation")");
  CHECK(printable("répliques: ≥ 3 — ok ✓", 512) == "répliques: ≥ 3 — ok ✓");
  CHECK(printable("", 512).empty());
}

TEST_CASE("control characters cannot forge a log line or repaint a terminal", "[printable]") {
  CHECK(printable("line\nforged 2026-01-01 [error] x", 512) == "line\\nforged 2026-01-01 [error] x");
  CHECK(printable("a\r\tb", 512) == "a\\r\\tb");
  CHECK(printable("\x1b[31mred\x1b[0m", 512) == "\\x1b[31mred\\x1b[0m");
  CHECK(printable(std::string("nul\0byte", 8), 512) == "nul\\x00byte");
  CHECK(printable("del\x7f", 512) == "del\\x7f");
  CHECK(printable("c1 \xc2\x9b"
                  "31m",
                  512) == "c1 \\u009b31m");  // U+009B, the 8-bit CSI
}

TEST_CASE("bytes that are not UTF-8 are shown as bytes", "[printable]") {
  CHECK(printable("\xff\xfe", 512) == "\\xff\\xfe");
  CHECK(printable("overlong \xc0\xaf", 512) == "overlong \\xc0\\xaf");
  CHECK(printable("cut \xe2\x89", 512) == "cut \\xe2\\x89");
  CHECK(printable("surrogate \xed\xa0\x80", 512) == "surrogate \\xed\\xa0\\x80");
}

TEST_CASE("long text is cut at a character boundary, saying how much was left out", "[printable]") {
  CHECK(printable(std::string(600, 'x'), 512) == std::string(512, 'x') + "... (88 more bytes)");
  // "é" is two bytes: not split.
  CHECK(printable("abé", 3) == "ab... (2 more bytes)");
  CHECK(printable("abc", 3) == "abc");
}

}  // namespace printable_test
