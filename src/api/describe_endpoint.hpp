// GET /openapi.json and GET /catalog: what the caller's key or token may call, never more (an
// OpenAPI 3.1 document, or the catalog's shorter JSON: http/openapi.hpp); without one, what a call
// without one hears (401). Plain C++.
#pragma once

#include "api/call_path.hpp"
#include "api/exchange.hpp"
#include "api/services.hpp"

class DescribeEndpoint {
  public:
    DescribeEndpoint(CallPath &path, services::Calls &calls, services::Describer &describer)
        : path_(path), calls_(calls), describer_(describer)
    {
    }
    // openapi_document: /openapi.json; else /catalog.
    void handle(Exchange &ex, bool openapi_document);

  private:
    CallPath &path_;
    services::Calls &calls_;
    services::Describer &describer_;
};
