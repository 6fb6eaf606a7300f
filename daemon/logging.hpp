// Log set-up for every subcommand: spdlog to stderr, a level, and one of three line
// formats: human text with an RFC 3339 time, journal lines (`<N>` syslog priority
// prefixes, no time: journald stamps each line and filters by priority, so
// `journalctl -p warning -u kstate` shows the warnings), or one JSON object per line
// for log shippers, with structured fields (core/log_fields.hpp). Text becomes journal
// by itself when stderr is the journal ($JOURNAL_STREAM names its device and inode).
// Callers then log through spdlog::info(...) or kstate::log_with(fields, ...).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "daemon/config.hpp"

namespace spdlog::sinks {
class sink;
}

namespace kstate::daemon {

// Installs the default logger "kstate". `sink` defaults to stderr; tests pass their own.
// With the default sink, LogFormat::text turns into LogFormat::journal when stderr is
// the journal. Errors on an unknown level name.
Status setup_logging(std::string_view level, LogFormat format, std::shared_ptr<spdlog::sinks::sink> sink = nullptr);

// A log level name (trace, debug, info, warn, error, off) or one of kubectl's -v
// numbers 0-10 (0-2 info, 3-5 debug, 6 and above trace: each request's method, URL and
// status, as kubectl's -v=6 shows them) as the level's name; nullopt when it is neither.
std::optional<std::string_view> log_level_name(std::string_view level_or_number);

// Whether $JOURNAL_STREAM's value ("DEVICE:INODE", systemd.exec(5)) names the file
// with this device and inode: systemd connected stderr to journald, and nobody
// redirected it since (a child that inherits the variable may not write to the journal).
bool is_journal_stream(std::string_view journal_stream, dev_t device, ino_t inode);

// is_journal_stream for the process's own stderr and environment.
bool stderr_is_journal();

}  // namespace kstate::daemon
