// The writer of an ApplySet and who may write it (see writer.hpp).
#include "states/writer.hpp"

#include <unistd.h>

namespace kstate::states {

namespace {

constexpr std::string_view daemon_word = "daemon";
constexpr std::string_view apply_word = "apply";

}  // namespace

std::string Writer::to_string() const {
  return std::string(mode == Mode::daemon ? daemon_word : apply_word) + " " + host + ":" + folder;
}

std::optional<Writer> Writer::parse(std::string_view text) {
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos) {
    return std::nullopt;
  }
  Writer writer;
  const std::string_view word = text.substr(0, space);
  if (word == daemon_word) {
    writer.mode = Mode::daemon;
  } else if (word == apply_word) {
    writer.mode = Mode::apply;
  } else {
    return std::nullopt;
  }
  const std::string_view rest = text.substr(space + 1);
  const std::size_t colon = rest.find(':');  // (a host name has no colon; a folder may)
  if (colon == std::string_view::npos || colon == 0) {
    return std::nullopt;
  }
  writer.host = std::string(rest.substr(0, colon));
  writer.folder = std::string(rest.substr(colon + 1));
  return writer;
}

const char* to_string(WriterVerdict verdict) {
  switch (verdict) {
    case WriterVerdict::same:
      return "same writer";
    case WriterVerdict::claim:
      return "claims the set";
    case WriterVerdict::conflict:
      return "another writer";
  }
  return "unknown";
}

WriterVerdict decide_writer(const std::optional<std::string>& recorded, const Writer& self, bool leader_elected) {
  if (!recorded || recorded->empty()) {
    return WriterVerdict::claim;
  }
  if (*recorded == self.to_string()) {
    return WriterVerdict::same;
  }
  const std::optional<Writer> other = Writer::parse(*recorded);
  if (self.mode == Writer::Mode::apply) {
    // Named one-shot runs share the set they were told to use; a daemon's is its own.
    return other && other->mode == Writer::Mode::apply ? WriterVerdict::same : WriterVerdict::conflict;
  }
  return leader_elected ? WriterVerdict::claim : WriterVerdict::conflict;
}

std::string local_host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    return "localhost";
  }
  return host;
}

}  // namespace kstate::states
