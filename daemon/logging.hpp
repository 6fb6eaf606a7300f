// Log set-up for every subcommand: spdlog to stderr (journald captures it under
// systemd), a level, and either human text or one JSON object per line for log
// shippers. Callers then log through spdlog::info(...) etc.
#pragma once

#include <memory>
#include <string_view>

#include "core/error.hpp"
#include "daemon/config.hpp"

namespace spdlog::sinks {
class sink;
}

namespace kstate::daemon {

// Installs the default logger "kstate". `sink` defaults to stderr; tests pass their own.
// Errors on an unknown level name.
Status setup_logging(std::string_view level, LogFormat format, std::shared_ptr<spdlog::sinks::sink> sink = nullptr);

}  // namespace kstate::daemon
