// GET|POST /q/{name}: a saved query called. Its arguments are read (api/call_arguments.hpp) and
// the answer's format chosen before anything runs; the call takes the call path
// (api/call_path.hpp); its answer is the rows in their format, paged, with an entity tag, gzip
// when asked, or an export's file. Plain C++.
#pragma once

#include "api/call_path.hpp"
#include "api/exchange.hpp"
#include "api/services.hpp"

class QueryEndpoint {
  public:
    QueryEndpoint(CallPath &path, services::Calls &calls) : path_(path), calls_(calls) {}

    void handle(Exchange &ex, const std::string &name);
    // A call's answer, made now or when a helper's result is back: an export's place goes back
    // once its file is sent, or its connection gone.
    void answer(CallResult &result, const CallPath::Shape &shape, HttpResponse &response,
                const std::string &id, int export_slot);

  private:
    static void answer_call(CallResult &result, const CallPath::Shape &shape,
                            HttpResponse &response, const std::string &id);

    CallPath &path_;
    services::Calls &calls_;
};
