// GET /schema: what the caller may use in SQL of its own (POST /sql), when its policy takes some
// (grant_adhoc; else 403 sql_not_allowed, as POST /sql answers): the tables of its allow-list with
// the columns its policy's role may read, how they are masked and whether they may be filtered,
// each table's DDL as the caller may see it, the write operations granted and the functions it may
// call (http/schema_document.hpp). ?table=name or ?table=schema.name narrows it to that table
// (403 name_not_allowed when it is not on the allow-list or not there, one answer for both).
// The same authentication and limits as a call; without a key or token, what a call without one
// hears (401). Plain C++.
#pragma once

#include "api/call_path.hpp"
#include "api/exchange.hpp"
#include "api/services.hpp"

class SchemaEndpoint {
  public:
    SchemaEndpoint(CallPath &path, services::Schemas &schemas) : path_(path), schemas_(schemas) {}
    void handle(Exchange &ex);

  private:
    CallPath &path_;
    services::Schemas &schemas_;
};
