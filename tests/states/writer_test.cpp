// One writer per ApplySet: the writer record's text form, and decide_writer as a table
// of (what the parent records, who asks, leader election) -> verdict.
#include "states/writer.hpp"

#include <catch2/catch.hpp>

namespace writer_test {

using kstate::states::decide_writer;
using kstate::states::Writer;
using kstate::states::WriterVerdict;

namespace {

const Writer daemon_a{Writer::Mode::daemon, "cp-1", "/etc/kstate/manifests"};
const Writer daemon_b{Writer::Mode::daemon, "cp-2", "/etc/kstate/manifests"};
const Writer daemon_a_other_folder{Writer::Mode::daemon, "cp-1", "/srv/manifests"};
const Writer apply_ci{Writer::Mode::apply, "runner-7", "/builds/x/manifests"};
const Writer apply_laptop{Writer::Mode::apply, "laptop", "/home/u/ksm"};

}  // namespace

TEST_CASE("a writer record reads back as it was written, and only kstate's form is a writer", "[writer]") {
  CHECK(daemon_a.to_string() == "daemon cp-1:/etc/kstate/manifests");
  CHECK(apply_laptop.to_string() == "apply laptop:/home/u/ksm");
  CHECK(Writer::parse(daemon_a.to_string()) == daemon_a);
  CHECK(Writer::parse(apply_laptop.to_string()) == apply_laptop);
  const Writer colon_folder{Writer::Mode::apply, "h", "/a:b,/c"};
  CHECK(Writer::parse(colon_folder.to_string()) == colon_folder);
  CHECK_FALSE(Writer::parse(""));
  CHECK_FALSE(Writer::parse("daemon"));
  CHECK_FALSE(Writer::parse("helm cp-1:/x"));
  CHECK_FALSE(Writer::parse("daemon :/x"));
}

TEST_CASE("decide_writer: who may write an ApplySet", "[writer]") {
  struct Row {
    const char* name;
    std::optional<std::string> recorded;
    Writer self;
    bool leader_elected;
    WriterVerdict verdict;
  };
  const std::vector<Row> rows = {
      {"a new set: claimed", std::nullopt, daemon_a, false, WriterVerdict::claim},
      {"a set from before writers were recorded: claimed", std::string(), daemon_a, false, WriterVerdict::claim},
      {"this daemon wrote it last", daemon_a.to_string(), daemon_a, false, WriterVerdict::same},
      {"another host's daemon, no leader election: hold", daemon_b.to_string(), daemon_a, false,
       WriterVerdict::conflict},
      {"the same host, another folder: another writer", daemon_a_other_folder.to_string(), daemon_a, false,
       WriterVerdict::conflict},
      {"another daemon, this one leads: takes over", daemon_b.to_string(), daemon_a, true, WriterVerdict::claim},
      {"a one-shot apply wrote into the daemon's set: the daemon holds", apply_laptop.to_string(), daemon_a, false,
       WriterVerdict::conflict},
      {"a one-shot apply wrote it, this daemon leads: takes over", apply_laptop.to_string(), daemon_a, true,
       WriterVerdict::claim},
      {"an unreadable record: another writer", std::string("someone"), daemon_a, false, WriterVerdict::conflict},
      {"apply into a daemon's set: refused", daemon_a.to_string(), apply_laptop, false, WriterVerdict::conflict},
      {"apply into a set another apply wrote (another CI runner): the same named set", apply_ci.to_string(),
       apply_laptop, false, WriterVerdict::same},
      {"apply into a new set", std::nullopt, apply_ci, false, WriterVerdict::claim},
      {"apply into its own set", apply_ci.to_string(), apply_ci, false, WriterVerdict::same},
      {"apply over an unreadable record: refused", std::string("someone"), apply_ci, false, WriterVerdict::conflict},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    CHECK(kstate::states::to_string(decide_writer(row.recorded, row.self, row.leader_elected)) ==
          std::string(kstate::states::to_string(row.verdict)));
  }
}

}  // namespace writer_test
