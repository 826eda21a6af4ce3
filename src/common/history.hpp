// One call as querygate.history keeps it, from the HTTP side when the call is answered (the
// request handler knows the answer; the runner knows who called and what ran) to the shared ring
// (shmem/history_ring.hpp). Plain C++: views into the answering side's strings.
#pragma once

#include "common/run_events.hpp"

#include <cstdint>
#include <string_view>

struct CallRecord {
    std::int64_t duration_us = 0; // from the request read to its answer made
    int status = 0;
    std::string_view request_id;
    std::string_view key;      // the key's name ("jwt" for a token); empty when none was accepted
    std::string_view policy;   // empty when no key was accepted
    std::string_view query;    // the name called, as the URL gave it; empty for SQL (adhoc)
    bool adhoc = false;        // SQL the caller wrote (POST /sql), not a saved query
    std::string_view sql;      // its statement as querygate.history_sql keeps it; empty: none
    std::int64_t revision = 0; // saved_query.revision of what ran; 0 when nothing ran
    int version = 0;           // and its saved_query.version
    std::string_view code;     // the error's code; empty on success
    std::string_view client;   // the caller's address, after trusted proxies
    std::uint64_t rows = 0;
    std::uint64_t bytes = 0; // the answer's body
    std::string_view masked; // a JSON array of the masked output columns' names; empty: none
    std::string_view params; // a JSON object of the parameters (history_params); empty: none
    run_events::Who who;     // who called, for GET /events; unknown when no caller was accepted
};
