// Runs one call of a saved query: authenticate, authorize, bind, execute, serialize, in one
// transaction. The interface is plain C++ (request_handler.cpp includes no PostgreSQL header); the
// implementation (query_runner.cpp) is the PostgreSQL side.
#pragma once

#include "common/api_error.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct CallParam {
    std::string name;
    std::string value; // text given to the type's input function
    bool is_null = false;
};

struct CallRequest {
    std::string query;        // the saved query's name, from the URL
    std::string secret;       // a presented API key, empty when none
    std::string bearer_token; // a presented JWT, empty when none (a key is judged first)
    std::string client_ip;    // the caller's address after trusted proxies; empty when unknown
    std::vector<CallParam> params;
    long page = 1;
    long page_size = 100;
    std::string request_id;
};

struct CallResult {
    ApiError error;   // set() when the call failed
    std::string body; // JSON rows on success
    bool has_more = false;
};

class QueryRunner {
  public:
    QueryRunner();
    ~QueryRunner();
    QueryRunner(const QueryRunner &) = delete;
    QueryRunner &operator=(const QueryRunner &) = delete;

    // Once, after the worker has connected to its database.
    void start();
    CallResult run(const CallRequest &request);
    // Group commit (src/worker/group_commit.hpp), in WAL positions: how far WAL must be flushed
    // before an answer just made may go (0: now); at the end of a round, asking for the round's
    // flush; and how far WAL is flushed.
    uint64_t hold_until();
    void end_round();
    uint64_t flushed();
    // The connections the worker holds, before each round (one alone never defers its commit).
    void set_connections(unsigned n);

    struct State; // query_runner.cpp

  private:
    std::unique_ptr<State> state_;
};
