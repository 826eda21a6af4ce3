// The rate-limit fields of an answer to a caller with limits, as the IETF draft
// (draft-ietf-httpapi-ratelimit-headers, revisions 08 and later) writes them: two Structured
// Fields (RFC 9651), each a List of one Item, the policy's name a String with Integer parameters:
//
//   RateLimit: "rate";r=49;t=1             calls left (r) and seconds until they are all back (t)
//   RateLimit-Policy: "rate";q=50;w=1      the policy: its quota (q) over a window of w seconds
//
// The policy is the caller's limit closest to refusing: "rate" (its token bucket: q is the
// bucket's size, w the seconds an empty bucket takes to fill), or "daily" or "monthly" (its quota:
// q calls over the period). The earlier drafts' three fields (RateLimit-Limit, -Remaining,
// -Reset), which GitHub's and other APIs send, are written for querygate.rate_limit_headers =
// legacy. Plain C++.
#pragma once

#include "common/call.hpp"
#include "rules/rate_limits.hpp"

#include <cstdint>
#include <string>

namespace limit_fields {

// The value of RateLimit, and of RateLimit-Policy.
std::string ratelimit(const LimitReport &report);
std::string ratelimit_policy(const LimitReport &report);

// Every policy a caller's limits set, as one RateLimit-Policy value (a List: "rate", then its
// quota's), for /catalog; empty when they set none (an in-flight limit alone has no window).
std::string policies(const rate_limits::Limits &limits, std::int64_t unix_us);

} // namespace limit_fields
