// The access log's lines (http/access_log.hpp) in the server log, as LOG messages without the
// statement or context. PostgreSQL side.
#pragma once

#include "http/access_log.hpp"

class ServerLogSink final : public access_log::Sink {
  public:
    void write(const std::string &line) noexcept override;
};
