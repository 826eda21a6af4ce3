// What a call's record in the run history says about its values: the names of the masked output
// columns, and, for a policy that records them (set_policy(history_params => true)), the
// parameters, masked as strictly as the columns each one meets (PolicyDecision::param_actions).
// Both are JSON made to fit the room a record has for them (history_ring.hpp). PostgreSQL-style
// code: call under pg::guard.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/tupdesc.h"
#include "lib/stringinfo.h"
}

#include "rules/mask_rules.hpp"

#include <string>
#include <vector>

namespace history_values {

// The names of the masked columns as a JSON array; what does not fit is left out, and the list
// then ends with "...".
std::string masked_list(TupleDesc desc, const int *actions, int nactions);

// The parameters as a JSON object appended to out: each written as an output column of its type
// under its action would be (hash: the same HMAC a masked column shows; mask; null; drop: left
// out). Parameters that do not fit are left out, and the object then ends with "...": true.
// names, types, actions: one per parameter; nulls[i] == 'n' for a NULL.
void append_params(StringInfo out, const std::vector<std::string> &names,
                   const std::vector<Oid> &types, const std::vector<masking::Action> &actions,
                   const Datum *values, const char *nulls, const char *hash_key, int hash_key_len);

} // namespace history_values
