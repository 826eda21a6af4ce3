// The settings a call's SQL may read (querygate.tenant, request.jwt.claims), carried to Citus's
// worker nodes. With Citus, the shards' part of a call runs on the workers, over connections that
// know nothing of settings made with set_config_option: a tenant's row-level security
// (isolate_tenant) would compare with NULL there and show no row, and a query reading the token's
// claims would read none. Citus sends a transaction's SET LOCAL commands on to the workers, when
// citus.propagate_set_commands is 'local', only in what it takes for a multi-statement
// transaction (a transaction block, a procedure, a DO block), and only when the statements that
// reach the workers run in one too, since only then does it open a transaction there to send
// them in. So, with Citus loaded, a call that has such settings becomes an implicit transaction
// block (what PostgreSQL makes of several statements sent as one query: it commits or aborts as
// a whole at its end, and needs no COMMIT), and its settings, once made, are made again with SET
// LOCAL from a DO block (test/t/processes_065_citus.pl).
#pragma once

namespace citus_settings {

// Whether Citus is loaded in this process (its settings are defined).
bool loaded();

// Makes the transaction's querygate.tenant and request.jwt.claims, set already, Citus's workers'
// too. As the worker's own user (the tenant's setting is superuser-only); PostgreSQL-style: may
// raise an error.
void send_on();

// Before the call's transaction commits: closes the implicit block send_on() opened (nothing
// without one), so that CommitTransactionCommand commits.
void before_commit();

} // namespace citus_settings
