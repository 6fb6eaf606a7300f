// DynamicClient::watch() end to end against kstate-emulator: a watch from a list's
// resourceVersion sees ADDED, MODIFIED and DELETED for changes made while it runs,
// a BOOKMARK when it is idle (allowWatchBookmarks), the initial listing when no
// resourceVersion is given, and an ERROR event carrying 410 Expired after the
// history was compacted. Every coroutine call gets named lvalues (GCC 12 destroys
// temporaries bound to coroutine parameters twice: the earlier version of this test
// crashed on that).
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <vector>

#include "core/dynamic_client.hpp"
#include "tests/support/api_resources.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/temp_dir.hpp"

namespace watch_client_test {

using namespace kstate;
using kstate::testing::Emulator;

namespace {

using SteadyClock = std::chrono::steady_clock;

struct Session {
  boost::asio::io_context io;
  std::unique_ptr<Client> client;
  explicit Session(const Emulator& emulator) {
    KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    TransportOptions options;
    options.request_timeout = std::chrono::seconds(10);
    options.watch_idle_timeout = std::chrono::seconds(10);
    auto made = make_client(io.get_executor(), sources, options);
    REQUIRE(made.ok());
    client = std::move(made.value());
  }
};

ApiResource configmaps() {
  return kstate::testing::configmaps_resource();
}

json::Document configmap(const std::string& name, const std::string& value) {
  return json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("},"data":{"key":")" +
                     value + R"("}})")
      .value();
}

std::string name_of(const json::Value& object) {
  return std::string(json::string_or(json::find_path(object, {"metadata", "name"}), ""));
}

std::string version_of(const json::Value& object) {
  return std::string(json::string_or(json::find_path(object, {"metadata", "resourceVersion"}), ""));
}

// What a watch delivered, in order, as "TYPE name".
struct Seen {
  std::vector<std::string> events;
  std::vector<Error> errors;
  std::string last_version;
  std::chrono::milliseconds first_change_latency{-1};
};

}  // namespace

TEST_CASE("DynamicClient watch: ADDED, MODIFIED, DELETED and BOOKMARK events from a running emulator",
          "[client][watch][emulator]") {
  Emulator emulator;
  Session session(emulator);
  auto& client = *session.client->dynamic;
  auto resource = configmaps();

  Seen seen;
  auto outcome = run_sync(session.io, [&]() -> asio::awaitable<Status> {
    std::string ns = "default";
    auto first = configmap("before", "0");
    auto created = co_await client.create(resource, ns, first);
    if (!created) {
      co_return created.error();
    }
    ListOptions list_options;
    auto listed = co_await client.list(resource, ns, list_options);
    if (!listed) {
      co_return listed.error();
    }
    ListOptions watch_options;
    watch_options.resource_version = version_of(*listed);
    watch_options.allow_watch_bookmarks = true;
    // The watch cache sends its bookmark about 2 s before timeoutSeconds ends.
    watch_options.timeout_seconds = 3;
    auto watch = co_await client.watch(resource, ns, watch_options);
    if (!watch) {
      co_return watch.error();
    }
    // Changes after the watch started: each must come back as one event.
    auto added = configmap("watched", "1");
    auto made = co_await client.create(resource, ns, added);
    if (!made) {
      co_return made.error();
    }
    std::string name = "watched";
    std::string merge = R"({"data":{"key":"2"}})";
    WriteOptions write_options;
    std::string no_subresource;
    auto patched = co_await client.patch(resource, ns, name, PatchType::merge, merge, write_options, no_subresource);
    if (!patched) {
      co_return patched.error();
    }
    DeleteOptions delete_options;
    auto removed = co_await client.remove(resource, ns, name, delete_options);
    if (!removed) {
      co_return removed.error();
    }
    // A change this watch does not see (another namespace) moves the revision on, so the
    // watch cache has something to bookmark (recording 56: bookmarks come only when the
    // revision moved past what the watcher last got, about 2 s before the timeout).
    auto elsewhere = configmap("elsewhere", "1");
    if (auto other = co_await client.create(resource, "kube-system", elsewhere); !other) {
      co_return other.error();
    }
    auto started = SteadyClock::now();
    while (seen.events.size() < 4) {
      auto event = co_await watch->next();
      if (!event) {
        co_return event.error();
      }
      if (!event.value()) {
        break;  // the server ended the watch
      }
      auto& value = *event.value();
      if (seen.events.empty()) {
        seen.first_change_latency = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started);
      }
      seen.events.push_back(std::string(to_string(value.type)) + " " + name_of(value.object));
      seen.last_version = version_of(value.object);
    }
    co_return ok_status();
  }());
  REQUIRE(outcome.ok());
  INFO("events: " << seen.events.size());
  REQUIRE(seen.events.size() == 4);
  CHECK(seen.events[0] == "ADDED watched");
  CHECK(seen.events[1] == "MODIFIED watched");
  CHECK(seen.events[2] == "DELETED watched");
  CHECK(seen.events[3] == "BOOKMARK ");  // a bookmark carries only a resourceVersion
  CHECK_FALSE(seen.last_version.empty());
  WARN("watch: " << seen.events.size() << " events decoded; the first read " << seen.first_change_latency.count()
                 << " ms after the three writes were answered");
}

TEST_CASE("DynamicClient watch: initial listing without a resourceVersion, 410 Expired after compaction",
          "[client][watch][emulator]") {
  Emulator emulator(kstate::testing::without_namespace_controllers());
  Session session(emulator);
  auto& client = *session.client->dynamic;
  auto resource = configmaps();

  std::string old_version;
  auto prepared = run_sync(session.io, [&]() -> asio::awaitable<Status> {
    std::string ns = "default";
    for (const char* name : {"one", "two"}) {
      auto object = configmap(name, "x");
      auto created = co_await client.create(resource, ns, object);
      if (!created) {
        co_return created.error();
      }
      if (old_version.empty()) {
        old_version = version_of(*created);
      }
    }
    co_return ok_status();
  }());
  REQUIRE(prepared.ok());

  // No resourceVersion: the server first sends every existing object as ADDED.
  std::map<std::string, std::string> initial;
  auto listed = run_sync(session.io, [&]() -> asio::awaitable<Status> {
    std::string ns = "default";
    ListOptions options;
    options.timeout_seconds = 1;
    auto watch = co_await client.watch(resource, ns, options);
    if (!watch) {
      co_return watch.error();
    }
    for (;;) {
      auto event = co_await watch->next();
      if (!event) {
        co_return event.error();
      }
      if (!event.value()) {
        co_return ok_status();  // timeoutSeconds ended it cleanly
      }
      initial[name_of(event.value()->object)] = to_string(event.value()->type);
    }
  }());
  REQUIRE(listed.ok());
  CHECK(initial == std::map<std::string, std::string>{{"one", "ADDED"}, {"two", "ADDED"}});

  // A resourceVersion older than the history: the stream opens (200) and carries one ERROR event.
  emulator.compact();
  std::vector<WatchEvent> events;
  auto expired = run_sync(session.io, [&]() -> asio::awaitable<Status> {
    std::string ns = "default";
    ListOptions options;
    options.resource_version = old_version;
    options.timeout_seconds = 5;
    auto watch = co_await client.watch(resource, ns, options);
    if (!watch) {
      co_return watch.error();
    }
    auto event = co_await watch->next();
    if (!event) {
      co_return event.error();
    }
    if (event.value()) {
      events.push_back(std::move(*event.value()));
    }
    co_return ok_status();
  }());
  REQUIRE(expired.ok());
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == WatchEventType::error);
  auto error = events[0].error_of();
  CHECK(error.kind == ErrorKind::gone);
  CHECK(error.http_status == 410);
  CHECK(error.reason == "Expired");
  WARN("watch: initial listing " << initial.size() << " objects; compacted watch -> " << error.http_status << " "
                                 << error.reason);
}

TEST_CASE("DynamicClient watch refused with a 403 Status (Content-Length, not chunked) is a forbidden error naming it",
          "[client][watch][emulator]") {
  // Regression: the stream parser had no body limit (boost::none), which Boost 1.74
  // compares as smaller than any Content-Length, so every watch answered with a
  // sized body (a 403 or 410 Status) failed as "larger than the limit".
  Emulator emulator(kstate::testing::without_namespace_controllers());
  const std::string token = "watch-client-no-watch-token";
  REQUIRE(emulator
              .request("POST", "/emulator/tokens",
                       R"({"token":")" + token + R"(","user":"drift-writer","access":"no-watch"})")
              .status == 200);
  std::string kubeconfig = kstate::testing::read_file(emulator.kubeconfig_path());
  for (auto at = kubeconfig.find(emulator.admin_token()); at != std::string::npos;
       at = kubeconfig.find(emulator.admin_token(), at + token.size())) {
    kubeconfig.replace(at, emulator.admin_token().size(), token);
  }
  kstate::testing::TempDir directory("watch-client");
  const auto path = directory.path() / "kubeconfig";
  kstate::testing::write_file(path, kubeconfig);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  boost::asio::io_context io;
  KubeconfigSources sources;
  sources.kubeconfig_flag = path.string();
  auto made = make_client(io.get_executor(), sources, TransportOptions{});
  REQUIRE(made.ok());
  auto& client = *made.value()->dynamic;
  auto resource = configmaps();
  auto opened = run_sync(io, [&]() -> asio::awaitable<Status> {
    std::string ns = "default";
    ListOptions options;
    auto watch = co_await client.watch(resource, ns, options);
    if (!watch) {
      co_return watch.error();
    }
    co_return ok_status();
  }());
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.error().kind == ErrorKind::forbidden);
  CHECK(opened.error().message.find("cannot watch resource \"configmaps\"") != std::string::npos);
}

}  // namespace watch_client_test
