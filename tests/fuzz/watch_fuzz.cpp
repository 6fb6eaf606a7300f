// libFuzzer target for the watch event stream decoder (core/watch.hpp): the API
// server's newline-delimited JSON events, split across network reads anywhere. The
// first input bytes choose where the stream is cut into reads; the rest is the
// stream. Besides the sanitizers' findings it checks the decoder's promises: the
// events do not depend on how the bytes were split, every event holds an object,
// and an ERROR event always decodes into an Error with a message (whatever its
// code: a Status from a broken server may say 0).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "core/watch.hpp"

namespace {

void require(bool condition) {
  if (!condition) {
    std::abort();
  }
}

struct Decoded {
  std::vector<std::string> events;  // "TYPE compact-json"
  bool failed = false;
  bool partial = false;
};

// Feeds the stream in pieces of the given sizes (0 means "the rest").
Decoded decode(std::string_view stream, const std::vector<std::size_t>& cuts) {
  kstate::WatchDecoder decoder;
  Decoded out;
  std::size_t position = 0;
  std::size_t cut = 0;
  while (position < stream.size()) {
    std::size_t size = cut < cuts.size() && cuts[cut] != 0 ? cuts[cut] : stream.size() - position;
    ++cut;
    size = std::min(size, stream.size() - position);
    auto events = decoder.feed(stream.substr(position, size));
    position += size;
    if (!events) {
      require(!events.error().message.empty());
      out.failed = true;
      return out;
    }
    for (const auto& event : *events) {
      require(event.object.IsObject());
      if (event.type == kstate::WatchEventType::error) {
        require(!event.error_of().message.empty());
      }
      out.events.push_back(std::string(kstate::to_string(event.type)) + " " + kstate::json::dump(event.object));
    }
  }
  out.partial = decoder.has_partial_event();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Up to 4 read sizes (1..16 bytes each) from the first 4 bytes, the rest is the stream.
  std::vector<std::size_t> cuts;
  std::size_t header = std::min<std::size_t>(size, 4);
  for (std::size_t i = 0; i < header; ++i) {
    cuts.push_back(1 + data[i] % 16);
  }
  std::string_view stream(reinterpret_cast<const char*>(data) + header, size - header);
  auto whole = decode(stream, {});
  // Cycle the cut sizes over the whole stream.
  std::vector<std::size_t> pieces;
  for (std::size_t total = 0; !cuts.empty() && total < stream.size();) {
    std::size_t piece = cuts[pieces.size() % cuts.size()];
    pieces.push_back(piece);
    total += piece;
  }
  auto split = decode(stream, pieces);
  require(whole.failed == split.failed);
  if (!whole.failed) {
    require(whole.events == split.events);
    require(whole.partial == split.partial);
  }
  return 0;
}
