// Runs one call of a saved query: authenticate, authorize, bind, execute, serialize, in one
// transaction. The interface is plain C++ (request_handler.cpp includes no PostgreSQL header); the
// implementation (query_runner.cpp) is the PostgreSQL side.
#pragma once

#include "common/call.hpp"

#include <memory>

class GroupCommit; // worker/group_commit.hpp: the worker's, which it holds answers with

class QueryRunner {
  public:
    explicit QueryRunner(GroupCommit &group_commit);
    ~QueryRunner();
    QueryRunner(const QueryRunner &) = delete;
    QueryRunner &operator=(const QueryRunner &) = delete;

    // Once, after the worker has connected to its database.
    void start();
    CallResult run(const CallRequest &request);

    struct State; // query_runner.cpp

  private:
    std::unique_ptr<State> state_;
};
