// The HTTP API's errors: a status, a stable code, a sentence for people, and per-parameter
// problems. Codes are the contract (README, "Errors"); messages may improve, codes never change
// meaning. Every code is named once, below, with its one status: code elsewhere uses the names,
// never a string literal, so a code cannot be misspelt or answered with two statuses.
#pragma once

#include <string>
#include <utility>
#include <vector>

struct ErrorCode {
    int status;
    const char *code;
};

namespace error_code {

// The request itself (HTTP side).
inline constexpr ErrorCode invalid_body{400, "invalid_body"};
inline constexpr ErrorCode invalid_paging{400, "invalid_paging"};
// A path with a control character, raw or percent-encoded (%00-%1F, %7F): no path or query name
// has one, and a name is never cut at one (http/message_syntax.hpp).
inline constexpr ErrorCode invalid_path{400, "invalid_path"};
// ?stream= that is neither true nor false, or a stream with paging, or of a call that writes.
inline constexpr ErrorCode invalid_stream{400, "invalid_stream"};
// ?timeout= or the body's "timeout" is not a number of seconds from 0.001 up.
inline constexpr ErrorCode invalid_timeout{400, "invalid_timeout"};
// POST /mcp: an MCP-Protocol-Version this server does not speak (http/mcp.hpp).
inline constexpr ErrorCode unsupported_protocol_version{400, "unsupported_protocol_version"};
// POST /mcp: a JSON-RPC message that cannot be read (its body is JSON-RPC's error).
inline constexpr ErrorCode invalid_message{400, "invalid_message"};
inline constexpr ErrorCode not_found{404, "not_found"};
inline constexpr ErrorCode method_not_allowed{405, "method_not_allowed"};
// Neither ?format= nor Accept names a format the answer can have (http/content_negotiation.hpp).
inline constexpr ErrorCode not_acceptable{406, "not_acceptable"};
inline constexpr ErrorCode payload_too_large{413, "payload_too_large"};
inline constexpr ErrorCode uri_too_long{414, "uri_too_long"};
inline constexpr ErrorCode header_too_large{431, "header_too_large"};
// A request that is not HTTP/1.1 as RFC 9112 writes it: refused by libmicrohttpd before it reached
// us (malformed, an HTTP version it does not speak; the status is the one it chose), or by our
// checks of its head and framing (http/message_syntax.hpp, http/framing.hpp: 400, or 501 for a
// transfer coding other than chunked).
inline constexpr const char *invalid_request = "invalid_request";

// Who is calling and what they may call.
inline constexpr ErrorCode unauthorized{401, "unauthorized"};
// A bearer token (a JWT) that is refused: said as RFC 6750 (3.1) says it, in WWW-Authenticate too,
// with why (a key's refusal says nothing: keys could be probed).
inline constexpr ErrorCode invalid_token{401, "invalid_token"};
inline constexpr ErrorCode token_expired{401, "token_expired"};
inline constexpr ErrorCode query_not_found{404, "query_not_found"};
inline constexpr ErrorCode sign_in_required{403, "sign_in_required"};
inline constexpr ErrorCode claim_missing{403, "claim_missing"};
inline constexpr ErrorCode privileged_role{403, "privileged_role"};

// The caller's limits (rules/rate_limits.hpp): answered with Retry-After, before anything runs.
inline constexpr ErrorCode rate_limited{429, "rate_limited"};
inline constexpr ErrorCode quota_exceeded{429, "quota_exceeded"};
// GET /events: the key (or the policy, for bearer tokens) holds querygate.max_event_streams_per_key
// streams already, on any worker.
inline constexpr ErrorCode too_many_streams{429, "too_many_streams"};

// Parameters.
inline constexpr ErrorCode param_required{400, "param_required"};
inline constexpr ErrorCode param_invalid{400, "param_invalid"};
inline constexpr ErrorCode param_from_claim{400, "param_from_claim"};

// What the policy decides about the statement (policy_decision.hpp), and what the call may do.
inline constexpr ErrorCode untrusted_code{403, "untrusted_code"};
inline constexpr ErrorCode table_not_allowed{403, "table_not_allowed"};
inline constexpr ErrorCode write_op_not_allowed{403, "write_op_not_allowed"};
inline constexpr ErrorCode read_only{403, "read_only"};
inline constexpr ErrorCode mask_unresolvable{403, "mask_unresolvable"};
inline constexpr ErrorCode mask_expression{403, "mask_expression"};
inline constexpr ErrorCode mask_predicate{403, "mask_predicate"};
// A hashed output that can carry a value no hashed column holds: the hash of a value the caller
// chooses or knows confirms a guess.
inline constexpr ErrorCode mask_hash_input{403, "mask_hash_input"};
inline constexpr ErrorCode permission_denied{403, "permission_denied"};
// A row a write would make that a row-level security policy's WITH CHECK refuses: outside the
// caller's tenant, or what its policy may write.
inline constexpr ErrorCode row_not_allowed{403, "row_not_allowed"};
// POST /mcp from a page whose origin is neither a loopback host nor listed (DNS rebinding).
inline constexpr ErrorCode origin_not_allowed{403, "origin_not_allowed"};
// GET /events by a caller whose policy is not granted events (grant_events).
inline constexpr ErrorCode events_not_granted{403, "events_not_granted"};

// SQL a caller writes (POST /sql; policy/adhoc_statement.hpp).
// Not one statement PostgreSQL parses and analyses, of the kinds a saved query may be.
inline constexpr ErrorCode invalid_sql{400, "invalid_sql"};
// A caller whose policy takes no SQL of its own (grant_adhoc).
inline constexpr ErrorCode sql_not_allowed{403, "sql_not_allowed"};
// A name of a relation (or a lookup by a reg* type) the policy may not use, or that names
// nothing: one answer for both.
inline constexpr ErrorCode name_not_allowed{403, "name_not_allowed"};
// A built-in that can read the catalogs or the server's settings.
inline constexpr ErrorCode function_not_allowed{403, "function_not_allowed"};

// The call failed.
// The caller hung up while its query ran, which was then cancelled (nginx's 499): in the history,
// the statistics and the access log; no answer is sent.
inline constexpr ErrorCode client_closed{499, "client_closed"};
inline constexpr ErrorCode query_failed{500, "query_failed"};
// The answer would be larger than querygate.max_response_size (call/row_output.hpp).
inline constexpr ErrorCode response_too_large{500, "response_too_large"};
inline constexpr ErrorCode internal_error{500, "internal_error"};
inline constexpr ErrorCode unavailable{503, "unavailable"};
// The worker is stopping (src/call/stop_request.hpp): the call was refused or cancelled, and
// answered with Retry-After; another worker, or this one restarted, serves it.
inline constexpr ErrorCode shutting_down{503, "shutting_down"};
// A request that waited too long for its worker (src/http/overload_gate.hpp), refused at once.
inline constexpr ErrorCode overloaded{503, "overloaded"};
// A connection over querygate.max_connections_per_ip or querygate.max_connections, answered as it
// is accepted and closed.
inline constexpr ErrorCode too_many_connections{503, "too_many_connections"};
// A call that writes, on a hot standby (in recovery): writes go to the primary.
inline constexpr ErrorCode read_only_replica{503, "read_only_replica"};
// As many exports as querygate.max_exports allows are being written or sent (export_file.hpp).
inline constexpr ErrorCode too_many_exports{503, "too_many_exports"};
// GET /events: this worker holds querygate.max_event_streams streams already.
inline constexpr ErrorCode streams_full{503, "streams_full"};
inline constexpr ErrorCode query_timeout{504, "query_timeout"};

// Every code above, for what checks answers against the contract (the request-handler fuzz
// target); test/unit/api_error_test.cpp fails when a code is defined above and missing here.
inline constexpr ErrorCode all[] = {invalid_sql,
                                    sql_not_allowed,
                                    name_not_allowed,
                                    function_not_allowed,
                                    invalid_body,
                                    invalid_paging,
                                    invalid_timeout,
                                    not_acceptable,
                                    not_found,
                                    method_not_allowed,
                                    payload_too_large,
                                    uri_too_long,
                                    header_too_large,
                                    unauthorized,
                                    invalid_token,
                                    token_expired,
                                    query_not_found,
                                    sign_in_required,
                                    claim_missing,
                                    privileged_role,
                                    rate_limited,
                                    quota_exceeded,
                                    param_required,
                                    param_invalid,
                                    param_from_claim,
                                    untrusted_code,
                                    table_not_allowed,
                                    write_op_not_allowed,
                                    read_only,
                                    mask_unresolvable,
                                    mask_expression,
                                    mask_predicate,
                                    mask_hash_input,
                                    permission_denied,
                                    row_not_allowed,
                                    query_failed,
                                    internal_error,
                                    unavailable,
                                    query_timeout,
                                    too_many_connections,
                                    client_closed,
                                    response_too_large,
                                    shutting_down,
                                    overloaded,
                                    invalid_stream,
                                    too_many_exports,
                                    unsupported_protocol_version,
                                    invalid_message,
                                    origin_not_allowed,
                                    events_not_granted,
                                    too_many_streams,
                                    streams_full,
                                    read_only_replica,
                                    invalid_path};

} // namespace error_code

struct ApiError {
    int status = 0;
    std::string code;
    std::string message;
    std::vector<std::pair<std::string, std::string>> errors; // parameter -> problem
    std::string allow;                                       // for 405: the Allow header

    bool set() const { return status != 0; }
};

namespace api_errors {

inline ApiError make(ErrorCode code, std::string message)
{
    ApiError e;
    e.status = code.status;
    e.code = code.code;
    e.message = std::move(message);
    return e;
}

// One answer for a missing, wrong, expired or revoked key: a caller learns nothing from the
// difference.
inline ApiError unauthorized()
{
    return make(error_code::unauthorized, "a valid API key is required");
}
// One answer for a query that does not exist and one the key may not call: names cannot be probed.
inline ApiError query_not_found()
{
    return make(error_code::query_not_found, "no such query");
}

} // namespace api_errors
