// Boost.Beast HTTPS front end of the emulator (see http_server.hpp). One
// coroutine per connection; every socket operation has a deadline.
#include "tests/emulator/http_server.hpp"

#include <openssl/x509.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cmath>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <utility>  // Boost 1.74's awaitable.hpp needs std::exchange declared first.

#include "tests/emulator/api_server.hpp"
#include "tests/emulator/persistence.hpp"
#include "tests/emulator/preload.hpp"

namespace kstate::emulator {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using Stream = beast::ssl_stream<beast::tcp_stream>;
using net::use_awaitable;

namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
constexpr auto kIdleTimeout = std::chrono::minutes(5);
constexpr auto kWriteTimeout = std::chrono::seconds(60);
constexpr auto kTickInterval = std::chrono::milliseconds(50);
// The watch cache sends a bookmark this long before a watch's timeoutSeconds ends.
constexpr auto kBookmarkBeforeTimeout = std::chrono::seconds(2);

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

std::string percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() + 0 && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else if (text[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

std::map<std::string, std::string> parse_query(std::string_view query) {
  std::map<std::string, std::string> result;
  size_t start = 0;
  while (start < query.size()) {
    auto amp = query.find('&', start);
    auto part = query.substr(start, amp == std::string_view::npos ? std::string_view::npos : amp - start);
    auto eq = part.find('=');
    std::string key = percent_decode(part.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? "" : percent_decode(part.substr(eq + 1), true);
    if (!key.empty()) {
      result[key] = value;
    }
    if (amp == std::string_view::npos) {
      break;
    }
    start = amp + 1;
  }
  return result;
}

std::string subject_entry(X509_NAME* name, int nid, int& last) {
  last = X509_NAME_get_index_by_NID(name, nid, last);
  if (last < 0) {
    return {};
  }
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, last));
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                     static_cast<size_t>(ASN1_STRING_length(data)));
}

}  // namespace

std::string make_kubeconfig(const std::string& server_url, const std::string& ca_pem, const std::string& admin_token,
                            const std::string& readonly_token, const CertificateAndKey& client_certificate,
                            const std::vector<PasswordUser>& password_users) {
  std::string password_user_entries;
  std::string password_contexts;
  for (const auto& user : password_users) {
    password_user_entries +=
        "- name: " + user.name + "\n  user:\n    username: " + user.name + "\n    password: " + user.password + "\n";
    password_contexts += "- name: " + user.name + "\n  context:\n    cluster: kstate-emulator\n    user: " + user.name +
                         "\n    namespace: default\n";
  }
  std::ostringstream out;
  out << "apiVersion: v1\nkind: Config\n"
      << "clusters:\n- name: kstate-emulator\n  cluster:\n    server: " << server_url
      << "\n    certificate-authority-data: " << base64_encode(ca_pem) << "\n"
      << "users:\n- name: admin\n  user:\n    token: " << admin_token << "\n"
      << "- name: readonly\n  user:\n    token: " << readonly_token << "\n"
      << "- name: cert-admin\n  user:\n    client-certificate-data: "
      << base64_encode(client_certificate.certificate_pem)
      << "\n    client-key-data: " << base64_encode(client_certificate.key_pem) << "\n"
      << password_user_entries
      << "contexts:\n- name: kstate-emulator\n  context:\n    cluster: kstate-emulator\n    user: admin\n"
      << "    namespace: default\n"
      << "- name: readonly\n  context:\n    cluster: kstate-emulator\n    user: readonly\n    namespace: default\n"
      << "- name: cert-admin\n  context:\n    cluster: kstate-emulator\n    user: cert-admin\n    namespace: default\n"
      << password_contexts << "current-context: kstate-emulator\n";
  return out.str();
}

namespace {

struct Credentials {
  std::string admin_token;
  std::string readonly_token;
  CertificateAndKey ca;
  CertificateAndKey serving;
  CertificateAndKey client;
};

// Loads credentials from <data-dir>/pki (so kubeconfigs survive a restart) or makes new ones.
Result<Credentials> load_or_create_credentials(const std::optional<std::filesystem::path>& data_dir) {
  Credentials credentials;
  std::filesystem::path pki;
  if (data_dir) {
    pki = *data_dir / "pki";
    auto stored = read_file(pki / "credentials.json");
    if (stored) {
      auto doc = json::parse(*stored);
      if (doc) {
        auto text = [&](const char* key) { return std::string(json::string_or(json::find(*doc, key), "")); };
        credentials = {text("adminToken"),
                       text("readonlyToken"),
                       {text("caCertificate"), text("caKey")},
                       {text("servingCertificate"), text("servingKey")},
                       {text("clientCertificate"), text("clientKey")}};
        if (!credentials.admin_token.empty() && !credentials.ca.key_pem.empty()) {
          return credentials;
        }
      }
    }
  }
  auto ca = make_certificate_authority("kstate-emulator-ca");
  if (!ca) {
    return ca.error();
  }
  auto serving = issue_certificate(*ca, "kube-apiserver", {}, true);
  if (!serving) {
    return serving.error();
  }
  auto client = issue_certificate(*ca, "cert-admin", {"system:masters"}, false);
  if (!client) {
    return client.error();
  }
  credentials = {random_hex(16), random_hex(16), *ca, *serving, *client};
  if (data_dir) {
    std::error_code ignored;
    std::filesystem::create_directories(pki, ignored);
    json::Document doc(rapidjson::kObjectType);
    auto& allocator = doc.GetAllocator();
    json::set_string(doc, "adminToken", credentials.admin_token, allocator);
    json::set_string(doc, "readonlyToken", credentials.readonly_token, allocator);
    json::set_string(doc, "caCertificate", credentials.ca.certificate_pem, allocator);
    json::set_string(doc, "caKey", credentials.ca.key_pem, allocator);
    json::set_string(doc, "servingCertificate", credentials.serving.certificate_pem, allocator);
    json::set_string(doc, "servingKey", credentials.serving.key_pem, allocator);
    json::set_string(doc, "clientCertificate", credentials.client.certificate_pem, allocator);
    json::set_string(doc, "clientKey", credentials.client.key_pem, allocator);
    if (auto written = write_file_atomically(pki / "credentials.json", json::dump(doc)); !written.ok()) {
      return written.error();
    }
  }
  return credentials;
}

class Emulator {
 public:
  Emulator(net::io_context& io, const EmulatorOptions& options, Credentials credentials)
      : io_(io),
        options_(options),
        credentials_(std::move(credentials)),
        password_users_(password_users(credentials_.admin_token)),
        ssl_(ssl::context::tls_server),
        acceptor_(io),
        tick_timer_(io),
        api_(
            make_api_options(options, credentials_.ca.certificate_pem, password_users_),
            [] { return std::chrono::system_clock::now(); }, seed(options)),
        faults_(seed(options) + 1) {
    faults_.set(options.faults);
  }

  Status start() {
    ssl_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                     ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    boost::system::error_code error;
    ssl_.use_certificate_chain(net::buffer(credentials_.serving.certificate_pem), error);
    if (!error) {
      ssl_.use_private_key(net::buffer(credentials_.serving.key_pem), ssl::context::pem, error);
    }
    if (!error) {
      ssl_.add_certificate_authority(net::buffer(credentials_.ca.certificate_pem), error);
    }
    if (error) {
      return Error(ErrorKind::tls, "cannot load emulator certificates: " + error.message());
    }
    // Ask for a client certificate but accept connections without one (tokens).
    ssl_.set_verify_mode(ssl::verify_peer);
    static const unsigned char session_context[] = "kstate-emulator";
    SSL_CTX_set_session_id_context(ssl_.native_handle(), session_context, sizeof session_context - 1);

    auto colon = options_.listen.rfind(':');
    if (colon == std::string::npos) {
      return Error(ErrorKind::invalid_input, "--listen needs HOST:PORT");
    }
    auto address = net::ip::make_address(options_.listen.substr(0, colon), error);
    if (error) {
      return Error(ErrorKind::invalid_input, "--listen: bad address: " + error.message());
    }
    auto port = static_cast<std::uint16_t>(std::stoi(options_.listen.substr(colon + 1)));
    tcp::endpoint endpoint(address, port);
    acceptor_.open(endpoint.protocol(), error);
    if (!error) {
      acceptor_.set_option(net::socket_base::reuse_address(true), error);
      acceptor_.bind(endpoint, error);
    }
    if (!error) {
      acceptor_.listen(net::socket_base::max_listen_connections, error);
    }
    if (error) {
      return Error(ErrorKind::connection, "cannot listen on " + options_.listen + ": " + error.message());
    }
    auto bound = acceptor_.local_endpoint();
    url_ = "https://" + bound.address().to_string() + ":" + std::to_string(bound.port());
    api_.set_server_address(bound.address().to_string() + ":" + std::to_string(bound.port()));

    if (options_.data_dir) {
      auto snapshot = read_file(*options_.data_dir / "store.json");
      if (snapshot) {
        if (auto restored = api_.store().restore(*snapshot); !restored.ok()) {
          return restored;
        }
      }
      if (auto journal = read_file(*options_.data_dir / "journal.jsonl"); journal) {
        api_.store().replay(*journal);
      }
      api_.reload_custom_resources();
      if (auto opened = journal_.open(*options_.data_dir / "journal.jsonl"); !opened.ok()) {
        return opened;
      }
      if (auto written = write_snapshot(); !written.ok()) {
        return written;
      }
    }
    api_.store().on_change = [this] { wake_watchers(); };

    for (const auto& file : options_.preload) {
      auto text = read_file(file);
      if (!text) {
        return Error(ErrorKind::io, "--preload " + file.string() + ": cannot read it");
      }
      if (auto loaded = preload_objects(api_, *text, file.string()); !loaded) {
        return Error(loaded.error().kind, "--preload " + loaded.error().message);
      }
    }
    auto kubeconfig = make_kubeconfig(url_, credentials_.ca.certificate_pem, credentials_.admin_token,
                                      credentials_.readonly_token, credentials_.client, password_users_);
    if (auto written = write_file_atomically(options_.kubeconfig_out, kubeconfig); !written.ok()) {
      return written;
    }
    net::co_spawn(io_, accept_loop(), net::detached);
    net::co_spawn(io_, tick_loop(), net::detached);
    return ok_status();
  }

  const std::string& url() const { return url_; }

  // Appends the changes since the last call to the journal (cheap, done after
  // every request); the watch history holds them. When the history no longer
  // reaches back (compaction), a full snapshot is written instead.
  void persist() {
    if (!options_.data_dir || api_.store().current_version() == persisted_version_) {
      return;
    }
    Status written = ok_status();
    if (persisted_version_ < api_.store().oldest_watchable()) {
      written = write_snapshot();
    } else {
      for (const WatchEvent* event : api_.store().events_after(persisted_version_)) {
        written = journal_.append(Store::journal_line(*event));
        if (!written.ok()) {
          break;
        }
      }
      persisted_version_ = api_.store().current_version();
    }
    if (!written.ok()) {
      std::cerr << "kstate-emulator: " << written.error().message << std::endl;
    }
  }

  // Snapshot + empty journal: called at start, at shutdown and when the journal grows long.
  Status write_snapshot() {
    if (!options_.data_dir) {
      return ok_status();
    }
    auto written = write_file_atomically(*options_.data_dir / "store.json", api_.store().snapshot());
    if (!written.ok()) {
      return written;
    }
    persisted_version_ = api_.store().current_version();
    return journal_.truncate();
  }

  void shutdown() {
    persist();
    if (auto written = write_snapshot(); !written.ok()) {
      std::cerr << "kstate-emulator: " << written.error().message << std::endl;
    }
  }

 private:
  // Seconds (as the command line gives them) to whole milliseconds, rounded up: a positive
  // delay never becomes 0 ("at once" / "never").
  static std::chrono::milliseconds milliseconds(double seconds) {
    return std::chrono::milliseconds(static_cast<long>(std::ceil(seconds * 1000)));
  }
  static ApiServer::Options make_api_options(const EmulatorOptions& options, const std::string& ca_pem,
                                             const std::vector<PasswordUser>& password_users) {
    ApiServer::Options api_options;
    api_options.read_grants = read_grants_of(password_users);
    api_options.root_ca_pem = ca_pem;
    api_options.version = options.version;
    api_options.aggregated_discovery = options.aggregated_discovery;
    api_options.openapi_schemas = options.openapi_schemas;
    api_options.compaction_interval = milliseconds(options.compaction_interval_seconds);
    api_options.crd_create_hold = milliseconds(options.crd_create_hold_seconds);
    api_options.crd_create_hold_window = milliseconds(options.crd_create_hold_window_seconds);
    ControllerOptions& controllers = api_options.controllers;
    controllers.crd_establish_delay = milliseconds(options.crd_establish_delay_seconds);
    controllers.crd_update_delay = milliseconds(options.crd_update_delay_seconds);
    controllers.crd_deletion_delay = milliseconds(options.crd_deletion_delay_seconds);
    controllers.namespace_defaults = options.namespace_controllers;
    controllers.namespace_defaults_delay = milliseconds(options.namespace_controllers_delay_seconds);
    controllers.namespace_deletion_delay = milliseconds(options.namespace_deletion_delay_seconds);
    controllers.namespace_recheck_interval = milliseconds(options.namespace_recheck_interval_seconds);
    controllers.deployment_controller = options.deployment_controller;
    controllers.deployment_delay = milliseconds(options.deployment_controller_delay_seconds);
    controllers.job_controller = options.job_controller;
    controllers.job_delay = milliseconds(options.job_controller_delay_seconds);
    return api_options;
  }
  static std::uint64_t seed(const EmulatorOptions& options) {
    return options.seed != 0 ? options.seed : std::random_device{}();
  }

  void wake_watchers() {
    for (auto* timer : watchers_) {
      timer->cancel();
    }
  }

  net::awaitable<void> tick_loop() {
    while (true) {
      tick_timer_.expires_after(kTickInterval);
      boost::system::error_code error;
      co_await tick_timer_.async_wait(net::redirect_error(use_awaitable, error));
      api_.tick();
      persist();
      journal_.sync();  // group commit: durable within one tick
      if (journal_.lines_since_truncate() > 5000) {
        if (auto written = write_snapshot(); !written.ok()) {
          std::cerr << "kstate-emulator: " << written.error().message << std::endl;
        }
      }
    }
  }

  net::awaitable<void> accept_loop() {
    while (true) {
      boost::system::error_code error;
      tcp::socket socket = co_await acceptor_.async_accept(net::redirect_error(use_awaitable, error));
      if (error) {
        continue;
      }
      socket.set_option(tcp::no_delay(true), error);
      net::co_spawn(io_, session(std::move(socket)), net::detached);
    }
  }

  Identity identify(const http::request<http::string_body>& message, Stream& stream) const {
    Identity identity;
    auto authorization = message[http::field::authorization];
    if (!authorization.empty()) {
      std::string_view header(authorization.data(), authorization.size());
      if (header.starts_with("Basic ")) {
        if (auto user = check_basic_auth(password_users_, header.substr(6))) {
          identity = {true, *user, {"system:authenticated"}, false};
        }
      } else if (header.starts_with("Bearer ")) {
        auto token = header.substr(7);
        if (token == credentials_.admin_token) {
          identity = {true, "admin", {"system:masters", "system:authenticated"}, true};
        } else if (token == credentials_.readonly_token) {
          identity = {true, "readonly", {"system:authenticated"}, false};
        } else if (auto extra = extra_tokens_.find(std::string(token)); extra != extra_tokens_.end()) {
          // Tokens added through /emulator/tokens (credential rotation tests).
          std::vector<std::string> groups{"system:authenticated"};
          if (extra->second.admin) {
            groups.insert(groups.begin(), "system:masters");
          }
          identity = {true,
                      extra->second.user,
                      std::move(groups),
                      extra->second.admin || extra->second.no_watch,
                      extra->second.may_read,
                      !extra->second.no_watch};
        }
      }
      return identity;  // a bad token is 401 even with a certificate, as in kube-apiserver
    }
    X509* peer = SSL_get1_peer_certificate(stream.native_handle());
    if (peer != nullptr) {
      if (SSL_get_verify_result(stream.native_handle()) == X509_V_OK) {
        X509_NAME* subject = X509_get_subject_name(peer);
        int index = -1;
        identity.user = subject_entry(subject, NID_commonName, index);
        index = -1;
        for (std::string group = subject_entry(subject, NID_organizationName, index); !group.empty();
             group = subject_entry(subject, NID_organizationName, index)) {
          identity.groups.push_back(group);
        }
        identity.authenticated = !identity.user.empty();
        identity.may_write =
            std::find(identity.groups.begin(), identity.groups.end(), "system:masters") != identity.groups.end();
      }
      X509_free(peer);
    }
    return identity;
  }

  static bool is_admin(const Identity& identity) {
    return identity.authenticated && identity.may_write &&
           std::find(identity.groups.begin(), identity.groups.end(), "system:masters") != identity.groups.end();
  }

  // /emulator/...: request log, faults, compaction. Admin only.
  Response control(const Request& request) {
    Response response;
    response.verb = "emulator";
    if (!request.identity.authenticated) {
      response.status = 401;
      response.body = status_body(401, "Unauthorized", "Unauthorized");
      return response;
    }
    if (!is_admin(request.identity)) {
      response.status = 403;
      response.body = status_body(403, "Forbidden",
                                  "forbidden: User \"" + request.identity.user + "\" cannot use the emulator controls");
      return response;
    }
    if (request.path == "/emulator/requests") {
      if (request.method == "DELETE") {
        log_.reset();
        response.body = "{}";
      } else {
        response.body = log_.to_json();
      }
      return response;
    }
    if (request.path == "/emulator/faults") {
      if (request.method == "DELETE") {
        faults_.set({});
      } else if (request.method == "POST" || request.method == "PUT") {
        auto body = json::parse(request.body);
        auto settings = body ? FaultPlan::from_json(*body) : Result<FaultSettings>(body.error());
        if (!settings) {
          response.status = 400;
          response.body = status_body(400, "BadRequest", settings.error().message);
          return response;
        }
        faults_.set(*settings);
      }
      response.body = FaultPlan::to_json(faults_.settings());
      return response;
    }
    if (request.path == "/emulator/tokens" && request.method == "POST") {
      // {"token": T, "user": U, "admin": bool} accepts T from now on; {"token": T, "revoke": true} stops.
      // "access": "none" makes U a user without any RBAC grant (403 on every resource request);
      // "access": "no-watch" one whose Role grants every verb but watch (403 on watches only).
      auto body = json::parse(request.body);
      std::string token = body ? std::string(json::string_or(json::find(*body, "token"), "")) : "";
      if (token.empty()) {
        response.status = 400;
        response.body = status_body(400, "BadRequest", "a token is required");
        return response;
      }
      const auto* revoke = json::find(*body, "revoke");
      if (revoke != nullptr && revoke->IsBool() && revoke->GetBool()) {
        extra_tokens_.erase(token);
      } else {
        const auto* admin = json::find(*body, "admin");
        const std::string_view access = json::string_or(json::find(*body, "access"), "");
        extra_tokens_[token] = {std::string(json::string_or(json::find(*body, "user"), "rotated")),
                                admin != nullptr && admin->IsBool() && admin->GetBool(), access != "none",
                                access == "no-watch"};
      }
      response.body = "{\"tokens\":" + std::to_string(extra_tokens_.size()) + "}";
      return response;
    }
    if (request.path == "/emulator/drop-watches" && request.method == "POST") {
      // Every open watch stream is cut without its final chunk, as when a load balancer
      // or the API server drops connections.
      ++watch_drop_generation_;
      std::size_t open = watchers_.size();
      wake_watchers();
      response.body = "{\"dropped\":" + std::to_string(open) + "}";
      return response;
    }
    if (request.path == "/emulator/stall-watches" && request.method == "POST") {
      // Every open watch stream stops sending (no event, no bookmark) but stays open:
      // a server that hangs mid-stream. Clients must notice through their idle deadline.
      ++watch_stall_generation_;
      std::size_t open = watchers_.size();
      wake_watchers();
      response.body = "{\"stalled\":" + std::to_string(open) + "}";
      return response;
    }
    if (request.path == "/emulator/delayed") {
      // Requests waiting out an injected latency (arrived, not yet served): a test can
      // see one in flight, and POST ends every wait at once (they are then served), so
      // "completes only after X" needs no sleeping.
      if (request.method == "POST") {
        std::size_t released = delayed_.size();
        for (auto& [id, waiting] : delayed_) {
          waiting.timer->cancel();
        }
        response.body = "{\"released\":" + std::to_string(released) + "}";
        return response;
      }
      json::Document body(rapidjson::kObjectType);
      auto& allocator = body.GetAllocator();
      json::Value list(rapidjson::kArrayType);
      for (const auto& [id, waiting] : delayed_) {
        json::Value item(rapidjson::kObjectType);
        json::set_string(item, "method", waiting.method, allocator);
        json::set_string(item, "path", waiting.path, allocator);
        json::set(item, "latencyMs", json::Value(waiting.latency_ms), allocator);
        list.PushBack(std::move(item), allocator);
      }
      json::set(body, "delayed", std::move(list), allocator);
      response.body = json::dump(body);
      return response;
    }
    if (request.path == "/emulator/compact" && request.method == "POST") {
      api_.store().compact();
      response.body = "{\"resourceVersion\":\"" + std::to_string(api_.store().current_version()) + "\"}";
      return response;
    }
    response.status = 404;
    response.body = status_body(404, "NotFound", "no such emulator control: " + request.path);
    return response;
  }

  net::awaitable<void> session(tcp::socket socket) {
    Stream stream(std::move(socket), ssl_);
    beast::flat_buffer buffer;
    try {
      beast::get_lowest_layer(stream).expires_after(kHandshakeTimeout);
      co_await stream.async_handshake(ssl::stream_base::server, use_awaitable);
      while (true) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(64 * 1024 * 1024);
        beast::get_lowest_layer(stream).expires_after(kIdleTimeout);
        co_await http::async_read(stream, buffer, parser, use_awaitable);
        auto message = parser.release();
        bool keep_alive = message.keep_alive();
        bool keep_going = co_await serve(stream, message);
        if (!keep_going || !keep_alive) {
          break;
        }
      }
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
      boost::system::error_code ignored;
      co_await stream.async_shutdown(net::redirect_error(use_awaitable, ignored));
    } catch (const boost::system::system_error&) {
      // Client went away, timed out, or the TLS handshake failed: nothing to answer.
    }
  }

  // Answers one request; false when the connection must end.
  net::awaitable<bool> serve(Stream& stream, const http::request<http::string_body>& message) {
    Request request;
    request.method = std::string(message.method_string());
    std::string_view target(message.target().data(), message.target().size());
    auto question = target.find('?');
    request.path = percent_decode(target.substr(0, question), false);
    std::string query_string = question == std::string_view::npos ? "" : std::string(target.substr(question + 1));
    request.query = parse_query(query_string);
    request.accept = std::string(message[http::field::accept]);
    request.content_type = std::string(message[http::field::content_type]);
    request.if_none_match = std::string(message[http::field::if_none_match]);
    request.user_agent = std::string(message[http::field::user_agent]);
    request.body = message.body();
    request.identity = identify(message, stream);

    if (request.path.starts_with("/emulator/")) {
      Response response = control(request);
      co_await write_response(stream, message, response);
      co_return true;
    }

    auto arrived_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_).count();
    FaultDecision fault = faults_.decide(request.method, request.path);
    if (fault.latency.count() > 0) {
      net::steady_timer delay(io_);
      delay.expires_after(fault.latency);
      const std::uint64_t id = ++delayed_count_;
      delayed_[id] = {request.method, request.path, static_cast<int>(fault.latency.count()), &delay};
      boost::system::error_code ignored;
      co_await delay.async_wait(net::redirect_error(use_awaitable, ignored));
      delayed_.erase(id);
    }
    LoggedRequest entry{0, request.method, request.path, query_string, "", 0, request.identity.user, "", arrived_ms};
    if (fault.action == FaultAction::hang) {
      entry.fault = "hang";
      entry.verb = "hang";
      log_.record(entry);
      net::steady_timer hang(io_);
      hang.expires_after(std::chrono::minutes(10));
      boost::system::error_code ignored;
      co_await hang.async_wait(net::redirect_error(use_awaitable, ignored));
      co_return false;
    }
    if (fault.action == FaultAction::fail) {
      Response response;
      response.status = fault.code;
      response.body = injected_failure_body(fault.code, fault.retry_after_seconds);
      if (fault.code == 404) {
        // What kube-apiserver answers for a path it does not serve (recordings 08, 60).
        response.content_type = "text/plain; charset=utf-8";
        response.body = "404 page not found\n";
      }
      if (fault.code == 429 || fault.code == 503) {
        response.headers.emplace_back("Retry-After", std::to_string(fault.retry_after_seconds));
      }
      entry.fault = "fail";
      entry.verb = "fault";
      entry.code = fault.code;
      log_.record(entry);
      co_await write_response(stream, message, response);
      co_return true;
    }

    const auto handling = std::chrono::steady_clock::now();
    Response response = api_.handle(request);
    if (response.hold.count() > 0) {
      // Held like kube-apiserver holds a custom resource's create right after its CRD was
      // established: the request is answered (and takes effect) only after the hold.
      net::steady_timer hold(io_);
      hold.expires_after(response.hold);
      boost::system::error_code ignored;
      co_await hold.async_wait(net::redirect_error(use_awaitable, ignored));
      request.held = true;
      response = api_.handle(request);
    }
    if (!fault.warning.empty()) {
      add_warnings(response, {fault.warning});
    }
    persist();
    entry.handled_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - handling).count();
    entry.verb = response.verb;
    entry.code = response.status;
    if (fault.action == FaultAction::close) {
      // The request took effect but the answer is lost half-way: the hard case for clients.
      entry.fault = "close";
      log_.record(entry);
      auto reply = build(message, response);
      std::ostringstream text;
      text << reply;
      std::string bytes = text.str();
      beast::get_lowest_layer(stream).expires_after(kWriteTimeout);
      std::size_t cut = bytes.size() / 2;
      if (faults_.settings().drop_after_bytes >= 0) {
        cut = std::min(bytes.size(), static_cast<std::size_t>(faults_.settings().drop_after_bytes));
      }
      co_await net::async_write(stream, net::buffer(bytes.data(), cut), use_awaitable);
      beast::get_lowest_layer(stream).socket().close();
      co_return false;
    }
    log_.record(entry);
    if (response.watch) {
      co_await stream_watch(stream, message, *response.watch);
      co_return false;
    }
    co_await write_response(stream, message, response);
    co_return true;
  }

  static http::response<http::string_body> build(const http::request<http::string_body>& message, Response& response) {
    http::response<http::string_body> reply{static_cast<http::status>(response.status), message.version()};
    if (response.status != 304) {  // a 304 has no body, hence no Content-Type (recording 05)
      reply.set(http::field::content_type, response.content_type);
    }
    reply.set(http::field::cache_control, response.cache_control);
    for (const auto& [name, value] : response.headers) {
      reply.insert(name, value);
    }
    reply.keep_alive(message.keep_alive());
    reply.body() = std::move(response.body);
    reply.prepare_payload();
    return reply;
  }

  net::awaitable<void> write_response(Stream& stream, const http::request<http::string_body>& message,
                                      Response& response) {
    auto reply = build(message, response);
    beast::get_lowest_layer(stream).expires_after(kWriteTimeout);
    co_await http::async_write(stream, reply, use_awaitable);
  }

  net::awaitable<void> write_chunk(Stream& stream, const std::string& data) {
    beast::get_lowest_layer(stream).expires_after(kWriteTimeout);
    co_await net::async_write(stream, http::make_chunk(net::buffer(data)), use_awaitable);
  }

  net::awaitable<void> stream_watch(Stream& stream, const http::request<http::string_body>& message,
                                    const WatchSpec& spec) {
    http::response<http::empty_body> header{http::status::ok, message.version()};
    header.set(http::field::content_type, "application/json");
    header.set(http::field::cache_control, "no-cache, private");
    header.chunked(true);
    http::response_serializer<http::empty_body> serializer{header};
    beast::get_lowest_layer(stream).expires_after(kWriteTimeout);
    co_await http::async_write_header(stream, serializer, use_awaitable);

    auto deadline = std::chrono::steady_clock::now() +
                    (spec.timeout_seconds > 0 ? std::chrono::seconds(spec.timeout_seconds) : std::chrono::minutes(30));
    std::uint64_t last = spec.start_after;
    if (spec.initial_listing) {
      std::string batch;
      for (const auto& line : api_.initial_watch_events(spec)) {
        batch += line;
      }
      if (spec.initial_events_end_bookmark) {
        batch += api_.bookmark_line(spec, last, true);
      }
      if (!batch.empty()) {
        co_await write_chunk(stream, batch);
      }
    }
    net::steady_timer wake(io_);
    watchers_.insert(&wake);
    struct Unregister {
      std::set<net::steady_timer*>& set;
      net::steady_timer* timer;
      ~Unregister() { set.erase(timer); }
    } unregister{watchers_, &wake};
    // Bookmarks as kube-apiserver's watch cache sends them: about 2 s before timeoutSeconds
    // ends (none in a watch of 2 s or less), and every --watch-bookmark-interval (real: a
    // minute), each only when the revision has moved on since what the watcher last got
    // (recordings 55, 56).
    const auto started = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> before_timeout;
    if (spec.timeout_seconds > 0 && std::chrono::seconds(spec.timeout_seconds) > kBookmarkBeforeTimeout) {
      before_timeout = deadline - kBookmarkBeforeTimeout;
    }
    const auto interval = std::chrono::milliseconds(
        static_cast<long>(std::ceil(std::max(options_.watch_bookmark_interval_seconds, 0.001) * 1000)));
    auto next_bookmark = started + interval;
    if (before_timeout && *before_timeout < next_bookmark) {
      next_bookmark = *before_timeout;
    }
    std::uint64_t progress = last;  // what the watcher has: the last event or bookmark sent
    auto drop_generation = watch_drop_generation_;
    auto stall_generation = watch_stall_generation_;
    while (std::chrono::steady_clock::now() < deadline) {
      if (watch_drop_generation_ != drop_generation) {
        beast::get_lowest_layer(stream).socket().close();  // dropped: no final chunk
        co_return;
      }
      if (watch_stall_generation_ != stall_generation) {
        net::steady_timer stall(io_);  // silent until the deadline; the client gives up first
        stall.expires_at(deadline);
        boost::system::error_code ignored;
        co_await stall.async_wait(net::redirect_error(use_awaitable, ignored));
        beast::get_lowest_layer(stream).socket().close();
        co_return;
      }
      auto events = api_.watch_events(spec, last);
      if (!events) {
        co_await write_chunk(stream, api_.expired_line(last));
        break;
      }
      last = events->last;
      if (!events->lines.empty()) {
        std::string batch;
        for (const auto& line : events->lines) {
          batch += line;
        }
        co_await write_chunk(stream, batch);
        progress = last;
      }
      const auto now = std::chrono::steady_clock::now();
      if (spec.bookmarks && now >= next_bookmark) {
        const std::uint64_t current = api_.store().current_version();
        if (current > progress) {
          co_await write_chunk(stream, api_.bookmark_line(spec, current, false));
          progress = current;
        }
        next_bookmark = now + interval;
        if (before_timeout && now < *before_timeout && *before_timeout < next_bookmark) {
          next_bookmark = *before_timeout;
        }
      }
      wake.expires_at(std::min(deadline, spec.bookmarks ? next_bookmark : deadline));
      boost::system::error_code ignored;
      co_await wake.async_wait(net::redirect_error(use_awaitable, ignored));
    }
    beast::get_lowest_layer(stream).expires_after(kWriteTimeout);
    co_await net::async_write(stream, http::make_chunk_last(), use_awaitable);
  }

  net::io_context& io_;
  EmulatorOptions options_;
  Credentials credentials_;
  std::vector<PasswordUser> password_users_;
  ssl::context ssl_;
  tcp::acceptor acceptor_;
  net::steady_timer tick_timer_;
  ApiServer api_;
  FaultPlan faults_;
  RequestLog log_;
  std::set<net::steady_timer*> watchers_;
  struct DelayedRequest {
    std::string method;
    std::string path;
    int latency_ms = 0;
    net::steady_timer* timer = nullptr;
  };
  std::map<std::uint64_t, DelayedRequest> delayed_;  // by arrival; see /emulator/delayed
  std::uint64_t delayed_count_ = 0;
  struct ExtraToken {
    std::string user;
    bool admin = false;
    bool may_read = true;
    bool no_watch = false;  // every verb but watch
  };
  std::map<std::string, ExtraToken> extra_tokens_;  // added by /emulator/tokens
  std::uint64_t watch_drop_generation_ = 0;         // bumped by /emulator/drop-watches
  std::uint64_t watch_stall_generation_ = 0;        // bumped by /emulator/stall-watches
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::string url_;
  Journal journal_;
  std::uint64_t persisted_version_ = 0;
};

// An io_context whose suspended coroutines (open connections, watches) can be destroyed
// before the Emulator they refer to: ~io_context would destroy them after it, and a
// watch's clean-up then touched the destroyed Emulator (SIGSEGV on SIGTERM).
class ServerIoContext : public net::io_context {
 public:
  using net::io_context::io_context;
  void destroy_suspended_work() { shutdown(); }
};

}  // namespace

int run_emulator(const EmulatorOptions& options) {
  if (options.data_dir) {
    std::error_code error;
    std::filesystem::create_directories(*options.data_dir, error);
    if (error) {
      std::cerr << "kstate-emulator: cannot create " << options.data_dir->string() << ": " << error.message()
                << std::endl;
      return 1;
    }
  }
  auto credentials = load_or_create_credentials(options.data_dir);
  if (!credentials) {
    std::cerr << "kstate-emulator: " << credentials.error().message << std::endl;
    return 1;
  }
  ServerIoContext io(1);
  Emulator emulator(io, options, std::move(*credentials));
  if (auto started = emulator.start(); !started.ok()) {
    std::cerr << "kstate-emulator: " << started.error().message << std::endl;
    return 1;
  }
  net::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    emulator.shutdown();
    io.stop();
  });
  std::cout << "listening on " << emulator.url() << std::endl;
  io.run();
  io.destroy_suspended_work();
  return 0;
}

}  // namespace kstate::emulator
