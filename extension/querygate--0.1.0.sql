-- querygate 0.1.0: catalog tables, administration functions and their privileges.
\echo Use "CREATE EXTENSION querygate" to load this file. \quit

-- Administrators: superusers and members of querygate_admin. Roles are cluster-wide, so the role may
-- already exist from another database's installation; it is then reused.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'querygate_admin') THEN
        CREATE ROLE querygate_admin NOLOGIN;
    END IF;
END
$$;

-- Saved queries. `sql` is what the administrator wrote (with :name placeholders); `prepared_sql` is
-- the same statement with $n parameters, analyzed at save time; `param_names[i]` is $i, of type
-- `param_types[i]`. `search_path` is the saver's, made explicit at save time (pg_catalog first,
-- "$user" resolved, pg_temp last), so the worker resolves names exactly as the analysis did.
-- `saved_by` is the role that saved it: a query may only be granted to a policy whose role that
-- role could act as. Roles, tables and types are stored as regrole, regclass and regtype, which a
-- dump writes by name: a restore into a cluster whose OIDs differ points at the same objects.
-- `revision` changes on every save, so workers know when a kept plan is stale.
CREATE TABLE saved_query (
    name          text PRIMARY KEY,
    sql           text NOT NULL,
    prepared_sql  text NOT NULL,
    param_names   text[] NOT NULL,
    param_types   regtype[] NOT NULL,
    search_path   text NOT NULL,
    saved_by      regrole NOT NULL,
    description   text,
    param_rules   jsonb,             -- per-parameter rules (type, required, default, enum, ...)
    version       integer NOT NULL,  -- which of saved_query_version this is
    revision      bigint NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE SEQUENCE saved_query_revision;

-- Every version of a saved query, as save_query was given it, numbered from 1 per name: the
-- published one is copied into saved_query (which is what callers get); a draft
-- (save_query(..., publish => false)) waits here for publish_query, and rollback_query publishes an
-- earlier one again. Versions are analyzed again when published: the tables they name may have
-- changed since. drop_query removes them with the query.
CREATE TABLE saved_query_version (
    name          text NOT NULL,
    version       integer NOT NULL CHECK (version > 0),
    sql           text NOT NULL,
    description   text,
    param_rules   jsonb,
    search_path   text NOT NULL,
    saved_by      regrole NOT NULL,
    saved_at      timestamptz NOT NULL DEFAULT now(),
    published_at  timestamptz,       -- when it was first published; NULL: a draft
    PRIMARY KEY (name, version)
);

-- A policy is a named set of grants shared by keys; its queries run as `run_as`. Only a superuser
-- or a member of `run_as` may change a policy, its grants or its keys (the rule of SET ROLE).
-- allow_superuser: `run_as` may be a superuser or a BYPASSRLS role (asked for by name; else refused
-- at creation and at every call).
-- allowed_tables: NULL means no list; otherwise every relation a query touches must be in it.
-- write_ops: what the policy may write (insert, update, delete, merge); NULL or empty: read-only.
-- mask_predicates: 'refuse' a query that filters, joins, groups or sorts on a masked column, or
-- 'allow' it.
-- history_params: whether querygate.history keeps each call's parameters (masked as strictly as
-- the columns each one meets: querygate.explain shows how).
-- statement_timeout: how long its calls may run (NULL: querygate.statement_timeout); never longer
-- than querygate.statement_timeout, which bounds every call.
-- rate_per_second, burst, max_in_flight, quota, quota_period: what each caller of the policy may
-- spend (set_limits; NULL: no such limit): each key counts alone, bearer tokens of the policy count
-- together. A key's own limits (the same columns of api_key) win, limit by limit.
-- events: its callers may open GET /events, a stream of the run events of the queries it is granted
-- (grant_events, revoke_events).
-- adhoc: its callers may send their own SQL (POST /sql, GET /schema, MCP execute_sql), governed as
-- its saved queries are; only a policy with an allow-list may (grant_adhoc, revoke_adhoc).
-- adhoc_write_ops: what that SQL may write, of what write_ops grants (only what both name, so
-- narrowing write_ops narrows this too); NULL or empty: read-only, whatever saved queries may write.
-- adhoc_search_path: where that SQL's unqualified names resolve, made explicit as a saved query's
-- search_path is (pg_catalog first, "$user" resolved, pg_temp last).
CREATE TABLE policy (
    name             text PRIMARY KEY,
    run_as           regrole NOT NULL,
    allow_superuser  boolean NOT NULL DEFAULT false,
    allowed_tables   regclass[],
    write_ops        text[],
    mask_predicates  text NOT NULL DEFAULT 'refuse' CHECK (mask_predicates IN ('refuse', 'allow')),
    history_params   boolean NOT NULL DEFAULT false,
    statement_timeout interval CHECK (statement_timeout > '0'),
    rate_per_second  double precision CHECK (rate_per_second > 0 AND rate_per_second <= 1000000),
    burst            integer CHECK (burst > 0),
    max_in_flight    integer CHECK (max_in_flight > 0),
    quota            bigint CHECK (quota > 0),
    quota_period     text CHECK (quota_period IN ('day', 'month')),
    events           boolean NOT NULL DEFAULT false,
    -- Whose calls a watcher sees: 'own', its own (its key; a token's subject in its tenant), or
    -- 'policy', every caller's of this policy in its own tenant (grant_events).
    events_scope     text NOT NULL DEFAULT 'own' CHECK (events_scope IN ('own', 'policy')),
    -- Whose hashes the hash action's answers can be compared with: NULL, this policy's own (a
    -- key derived from mask_secret and the policy's name); a name, every policy that names it.
    hash_scope       text CHECK (hash_scope ~ '^[a-z][a-z0-9_]{0,62}$'),
    -- The issuers (iss) whose bearer tokens may name this policy; empty: no token reaches it, so a
    -- leaked HS256 key or a JWKS signer reaches only the policies that accept its issuer.
    jwt_issuers      text[] NOT NULL DEFAULT '{}' CHECK (array_position(jwt_issuers, NULL) IS NULL),
    adhoc            boolean NOT NULL DEFAULT false,
    adhoc_write_ops  text[],
    adhoc_search_path text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    -- Ad-hoc SQL never without the fence it needs, whatever changes the row.
    CHECK (NOT adhoc OR (allowed_tables IS NOT NULL AND adhoc_search_path IS NOT NULL))
);

-- Column masking rules of a policy. pattern is [schema.]table.column, lower-cased, '*' allowed in
-- any part; the strictest matching action wins (drop > null > mask > hash > mask_email >
-- partial, and of two partials the one showing fewer characters). action is stored as
-- querygate.mask normalises it: lower case, partial(lead,trail) with counts 0..31 and no blanks.
CREATE TABLE mask_rule (
    policy   text NOT NULL REFERENCES policy (name) ON DELETE CASCADE,
    pattern  text NOT NULL,
    action   text NOT NULL CHECK (action IN ('hash', 'mask', 'mask_email', 'null', 'drop')
                                  OR action ~ '^partial\((0|[1-9]|[12][0-9]|3[01]),(0|[1-9]|[12][0-9]|3[01])\)$'),
    PRIMARY KEY (policy, pattern)
);

CREATE TABLE query_grant (
    policy      text NOT NULL REFERENCES policy (name) ON DELETE CASCADE,
    query       text NOT NULL REFERENCES saved_query (name) ON DELETE CASCADE,
    granted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (policy, query)
);

-- Keys: only the SHA-256 of the secret is stored. A revoked key keeps its row (who had access, and
-- until when); its name can then be reused. `policy` becomes NULL when a policy is dropped with
-- cascade, after its keys were revoked.
CREATE TABLE api_key (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL,
    policy      text REFERENCES policy (name) ON DELETE SET NULL,
    key_hash    bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz,
    revoked_at  timestamptz,
    allowed_ips cidr[],            -- NULL: any address
    tenant      text,              -- set as querygate.tenant for the key's calls
    rate_per_second double precision CHECK (rate_per_second > 0 AND rate_per_second <= 1000000),
    burst       integer CHECK (burst > 0),
    max_in_flight integer CHECK (max_in_flight > 0),
    quota       bigint CHECK (quota > 0),
    quota_period text CHECK (quota_period IN ('day', 'month')),
    CHECK (revoked_at IS NOT NULL OR policy IS NOT NULL)
);
CREATE UNIQUE INDEX api_key_active_name ON api_key (name) WHERE revoked_at IS NULL;

-- Quota counts as the writer process last saved them (every querygate.quota_flush_interval and at a
-- clean stop): a key's, or a policy's for its bearer tokens; the calls counted since period_start.
-- Read when the caller is first seen after a start. Not audited: counts are not changes.
CREATE TABLE quota_usage (
    key_id        bigint UNIQUE REFERENCES api_key (id) ON DELETE CASCADE,
    policy        text UNIQUE REFERENCES policy (name) ON DELETE CASCADE ON UPDATE CASCADE,
    period_start  timestamptz NOT NULL,
    used          bigint NOT NULL CHECK (used >= 0),
    saved_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(key_id, policy) = 1)
);

-- The run history: a row per call answered (GET or POST /q/{name}), put in a shared ring by the
-- worker that answered and inserted here in batches by the writer process, outside the call's
-- transaction (querygate.history, querygate.history_sample_rate: errors always kept). Names, not
-- ids: a row outlives the key or query it names. Not audited: records are not changes.
--
-- Partitioned by the calls' time, with no index: the writer makes a partition for a day (an hour
-- when querygate.history_retention is under a day, a minute when under an hour) when a record
-- finds none, and drops a partition once all of it is older than the retention (a DROP TABLE:
-- no row deleted, nothing for VACUUM). An index on every row would cost the writer more than
-- the row itself (1.4 us a record of 2.6, measured); a query by time reads the partitions of
-- that time. The partitions are ordinary tables of this schema, named history_YYYYMMDD (with
-- _HH or _HHMM); pg_dump keeps them and their rows.
CREATE TABLE history (
    at              timestamptz NOT NULL,   -- when the call started
    request_id      text NOT NULL,
    key_name        text,                   -- the key's name ("jwt" for a bearer token), once accepted
    policy          text,
    query           text,                   -- the name called; NULL for SQL the caller wrote
    query_revision  bigint,                 -- saved_query.revision of what ran, once found
    query_version   integer,                -- and its version (querygate.query_versions)
    status          smallint NOT NULL,
    code            text,                   -- the error's code, when it failed
    duration_ms     double precision NOT NULL,
    rows            bigint NOT NULL,
    bytes           bigint NOT NULL,        -- the answer's body
    client          text,                   -- the caller's address, behind querygate.trusted_proxies
    worker          integer NOT NULL,
    masked_columns  jsonb,                  -- the answer's masked columns, by name
    params          jsonb,                  -- the call's parameters, when its policy keeps them
                                            -- (set_policy(history_params => true)), masked
    kind            text NOT NULL DEFAULT 'query',
                                            -- 'query', a saved query's call; 'sql', SQL the caller
                                            -- wrote (POST /sql)
    sql             text                    -- that SQL as querygate.history_sql keeps it: its
                                            -- "sha256:<hex>" (the default), its text, or NULL
) PARTITION BY RANGE (at);

-- The JWKS document that verifies RS256/ES256 bearer tokens (one row at most).
CREATE TABLE jwks (
    id    boolean PRIMARY KEY DEFAULT true CHECK (id),
    keys  jsonb NOT NULL
);

-- The per-database secret of the hash mask (HMAC-SHA-256), created with the extension. Changing
-- it changes every hashed value. Readable by superusers only (the workers read it as one): whoever
-- reads it can recompute the hash of any guessable value. The oldest row is the one in use:
-- CREATE EXTENSION during a pg_restore makes a fresh row, and the restored (older) one must win, so
-- hashes stay the same across a dump and restore.
CREATE TABLE mask_secret (
    secret      bytea NOT NULL CHECK (octet_length(secret) >= 32),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- pg_dump keeps the catalog's rows.
SELECT pg_catalog.pg_extension_config_dump('saved_query', '');
SELECT pg_catalog.pg_extension_config_dump('saved_query_revision', '');
SELECT pg_catalog.pg_extension_config_dump('saved_query_version', '');
SELECT pg_catalog.pg_extension_config_dump('policy', '');
SELECT pg_catalog.pg_extension_config_dump('query_grant', '');
SELECT pg_catalog.pg_extension_config_dump('api_key', '');
SELECT pg_catalog.pg_extension_config_dump('mask_rule', '');
SELECT pg_catalog.pg_extension_config_dump('jwks', '');
SELECT pg_catalog.pg_extension_config_dump('mask_secret', '');
SELECT pg_catalog.pg_extension_config_dump('quota_usage', '');
-- Not querygate.history: its rows are in its partitions, which are not the extension's own
-- objects, so pg_dump keeps them as it keeps any table.

-- Every change to the catalog tells the HTTP workers at commit (a rolled-back change tells nobody).
CREATE FUNCTION catalog_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_catalog_changed';

CREATE TRIGGER policy_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON policy
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER query_grant_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON query_grant
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
-- Keys and saved queries are told a row at a time (a catalog may hold millions of keys): the
-- workers forget the rows that changed when the change commits, and fetch them again when needed.
-- A new key or query needs no notice: no worker had it. The statements' triggers tell hot standbys
-- (whose workers forget every row of the table).
CREATE FUNCTION row_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_row_changed';
CREATE TRIGGER saved_query_changed AFTER UPDATE OR DELETE ON saved_query
    FOR EACH ROW EXECUTE FUNCTION row_changed();
CREATE TRIGGER saved_query_statement AFTER UPDATE OR DELETE OR TRUNCATE ON saved_query
    FOR EACH STATEMENT EXECUTE FUNCTION row_changed();
CREATE TRIGGER api_key_changed AFTER UPDATE OR DELETE ON api_key
    FOR EACH ROW EXECUTE FUNCTION row_changed();
CREATE TRIGGER api_key_statement AFTER UPDATE OR DELETE OR TRUNCATE ON api_key
    FOR EACH STATEMENT EXECUTE FUNCTION row_changed();
CREATE TRIGGER mask_rule_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON mask_rule
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER jwks_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON jwks
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER mask_secret_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON mask_secret
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();

-- The audit log: every change to a catalog table, one row per row changed (one per TRUNCATE), written
-- by the triggers below in the same transaction as the change, so a change rolled back leaves none.
-- actor: the role that asked for it (the caller of the administration function, or the current user
-- of a change made to a table directly); session_role: the session's login role; action: the
-- administration function (save_query, create_key, ...), NULL for a direct change. policy and object
-- name what changed (a query's, a policy's or a key's name, a grant's query, a mask's pattern).
-- before and after are the row as JSON without its secret columns (api_key.key_hash,
-- mask_secret.secret). Roles are kept by name: the log says who it was then, whatever becomes of the
-- role. Nothing is recorded while CREATE or ALTER EXTENSION runs. Rows are kept by pg_dump; a
-- restore adds the rows of the catalog it loads, as direct inserts by the restoring role.
CREATE TABLE audit (
    at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    xact          xid8 NOT NULL DEFAULT pg_current_xact_id(),
    actor         text NOT NULL,
    session_role  text NOT NULL,
    action        text,
    catalog       text NOT NULL,
    operation     text NOT NULL CHECK (operation IN ('insert', 'update', 'delete', 'truncate')),
    policy        text,
    object        text,
    before        jsonb,
    after         jsonb
);
CREATE INDEX audit_at ON audit (at);
SELECT pg_catalog.pg_extension_config_dump('audit', '');

CREATE FUNCTION audit_context() RETURNS text[]
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_audit_context';

CREATE FUNCTION audit_change() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    context text[] := querygate.audit_context();
    secret text[] := CASE TG_TABLE_NAME WHEN 'api_key' THEN '{key_hash}'
                                        WHEN 'mask_secret' THEN '{secret}' ELSE '{}' END;
    before_row jsonb;
    after_row jsonb;
    policy_key text := CASE TG_TABLE_NAME WHEN 'policy' THEN 'name' ELSE 'policy' END;
    object_key text := CASE TG_TABLE_NAME WHEN 'query_grant' THEN 'query'
                                          WHEN 'mask_rule' THEN 'pattern'
                                          WHEN 'jwks' THEN NULL WHEN 'mask_secret' THEN NULL
                                          ELSE 'name' END;
BEGIN
    IF context IS NULL THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        before_row := to_jsonb(OLD) - secret;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        after_row := to_jsonb(NEW) - secret;
    END IF;
    -- A key whose policy is dropped keeps its policy's name in the row: before's, when after has
    -- none.
    INSERT INTO querygate.audit (actor, session_role, action, catalog, operation, policy, object,
                                 before, after)
    VALUES (context[1], session_user, context[2], TG_TABLE_NAME, lower(TG_OP),
            coalesce(after_row->>policy_key, before_row->>policy_key),
            coalesce(after_row->>object_key, before_row->>object_key),
            before_row, after_row);
    RETURN NULL;
END
$$;

-- On each catalog table: one audit row per row changed, and one per TRUNCATE.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['saved_query', 'saved_query_version', 'policy', 'query_grant', 'api_key',
                             'mask_rule', 'jwks', 'mask_secret'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON querygate.%I '
                       'FOR EACH ROW EXECUTE FUNCTION querygate.audit_change()', t || '_audit', t);
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON querygate.%I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION querygate.audit_change()',
                       t || '_audit_truncate', t);
    END LOOP;
END
$$;

CREATE FUNCTION random_bytes(n integer) RETURNS bytea
    LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'querygate_random_bytes';
INSERT INTO mask_secret (secret) VALUES (random_bytes(32));

-- Administration. The functions check the caller themselves (superuser or querygate_admin member;
-- to change a policy, also a member of its run_as role; set_jwks: a superuser) and write the
-- catalog with a fixed, safe search_path; EXECUTE is also withheld from PUBLIC.
CREATE FUNCTION save_query(name text, sql text, description text DEFAULT NULL,
                           params jsonb DEFAULT NULL, publish boolean DEFAULT true) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_save_query';
CREATE FUNCTION drop_query(name text) RETURNS void
    LANGUAGE c STRICT AS 'MODULE_PATHNAME', 'querygate_drop_query';
-- publish_query: a version (the newest when NULL, a draft usually) becomes the one callers get;
-- rollback_query: an earlier one does again. Both analyze it again and check its grants, as a save.
CREATE FUNCTION publish_query(name text, version integer DEFAULT NULL) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_publish_query';
CREATE FUNCTION rollback_query(name text, version integer) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_rollback_query';
CREATE FUNCTION create_policy(name text, run_as regrole DEFAULT NULL,
                              allow_superuser boolean DEFAULT false) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_create_policy';
CREATE FUNCTION drop_policy(name text, "cascade" boolean DEFAULT false) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_drop_policy';
CREATE FUNCTION grant_query(policy text, query text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_grant_query';
CREATE FUNCTION revoke_query(policy text, query text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_revoke_query';
CREATE FUNCTION create_key(name text, policy text, expires_at timestamptz DEFAULT NULL,
                           allowed_ips cidr[] DEFAULT NULL, tenant text DEFAULT NULL,
                           rate_per_second double precision DEFAULT NULL,
                           burst integer DEFAULT NULL, max_in_flight integer DEFAULT NULL,
                           quota bigint DEFAULT NULL, quota_period text DEFAULT NULL) RETURNS text
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_create_key';
CREATE FUNCTION revoke_key(name text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_revoke_key';

-- Governance: table allow-lists, masks, writes, predicates on masked columns, JWKS, tenants.
-- allow_tables(policy, NULL) removes the list: refused while the policy has ad-hoc SQL.
CREATE FUNCTION allow_tables(policy text, tables regclass[]) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_allow_tables';
-- mask: refused when a query granted to the policy would then be refused at every call (a filter
-- on the column, say), unless force.
CREATE FUNCTION mask(policy text, column_pattern text, action text, force boolean DEFAULT false)
    RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_mask';
CREATE FUNCTION unmask(policy text, column_pattern text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_unmask';
CREATE FUNCTION grant_writes(policy text, ops text[]) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_grant_writes';
-- Whether the policy's callers may watch GET /events: run events (query, status, code, duration,
-- rows, request id; never parameters or rows) of calls of the queries the policy is granted: by
-- default ('own') a watcher's own calls only (the same key; a token's subject in its tenant); with
-- scope 'policy', every call of the policy's callers in the watcher's tenant (never another's).
CREATE FUNCTION grant_events(policy text, scope text DEFAULT 'own') RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_grant_events';
CREATE FUNCTION revoke_events(policy text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_revoke_events';
-- Whether the policy's callers may send their own SQL, governed exactly as its saved queries are
-- (allow-list, masks, tenant, limits, timeouts). Refused for a policy without an allow-list: the
-- caller writes the query, so the list is the fence. write_ops: what that SQL may write, of the
-- policy's own write_ops ('{}': nothing). search_path: where its names resolve (NULL: the caller's,
-- made explicit as save_query stores it). Calling it again replaces all three.
CREATE FUNCTION grant_adhoc(policy text, write_ops text[] DEFAULT '{}',
                            search_path text DEFAULT NULL) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_grant_adhoc';
CREATE FUNCTION revoke_adhoc(policy text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_revoke_adhoc';
-- statement_timeout '0' removes the policy's own (querygate.statement_timeout applies).
-- jwt_issuers replaces the list of issuers whose tokens may name the policy ('{}': none).
CREATE FUNCTION set_policy(policy text, mask_predicates text DEFAULT NULL,
                           allow_superuser boolean DEFAULT NULL,
                           history_params boolean DEFAULT NULL,
                           statement_timeout interval DEFAULT NULL,
                           jwt_issuers text[] DEFAULT NULL,
                           hash_scope text DEFAULT NULL) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_set_policy';
-- Limits of a policy (policy => ...) or of an active key (key => ...), one of the two: NULL leaves a
-- limit as it is, 0 removes it (a key without a limit of its own follows its policy's).
CREATE FUNCTION set_limits(policy text DEFAULT NULL, key text DEFAULT NULL,
                           rate_per_second double precision DEFAULT NULL,
                           burst integer DEFAULT NULL, max_in_flight integer DEFAULT NULL,
                           quota bigint DEFAULT NULL, quota_period text DEFAULT NULL) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_set_limits';
CREATE FUNCTION set_jwks(jwks jsonb) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_set_jwks';
CREATE FUNCTION isolate_tenant(tbl regclass, col name) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_isolate_tenant';

-- What a saved query touches, writes and returns under a policy, and whether the policy refuses it.
CREATE FUNCTION explain(policy text, query text) RETURNS jsonb
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_explain';

-- Read-only views for administrators: everything but the key hashes.
CREATE VIEW queries AS
    SELECT name, sql, description, param_rules, search_path, saved_by,
           (SELECT coalesce(jsonb_agg(jsonb_build_object('name', n, 'type', t::text) ORDER BY i), '[]')
              FROM unnest(param_names, param_types) WITH ORDINALITY AS p(n, t, i)) AS params,
           version, created_at, updated_at
      FROM saved_query;
-- Every version of every query: the one callers get is published; one never published is a draft.
CREATE VIEW query_versions AS
    SELECT v.name, v.version, coalesce(v.version = q.version, false) AS published,
           v.published_at IS NULL AS draft, v.sql, v.description, v.param_rules,
           v.search_path, v.saved_by, v.saved_at, v.published_at
      FROM saved_query_version v LEFT JOIN saved_query q ON q.name = v.name;
CREATE VIEW policies AS
    SELECT p.name, p.run_as, p.allow_superuser,
           array(SELECT g.query FROM query_grant g WHERE g.policy = p.name ORDER BY g.query) AS queries,
           p.allowed_tables, p.write_ops, p.adhoc, p.adhoc_write_ops, p.adhoc_search_path,
           p.mask_predicates, p.history_params, p.statement_timeout,
           p.events, p.events_scope, p.hash_scope,
           (SELECT jsonb_object_agg(m.pattern, m.action) FROM mask_rule m WHERE m.policy = p.name)
               AS masks,
           p.rate_per_second, p.burst, p.max_in_flight, p.quota, p.quota_period,
           p.created_at
      FROM policy p;
-- A key's limits are its own (NULL: its policy's applies); quota_used is the count last saved for
-- the current period (up to querygate.quota_flush_interval behind).
CREATE VIEW keys AS
    SELECT k.name, k.policy, k.created_at, k.expires_at, k.revoked_at, k.allowed_ips, k.tenant,
           k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()) AS active,
           k.rate_per_second, k.burst, k.max_in_flight, k.quota, k.quota_period,
           coalesce((SELECT u.used FROM quota_usage u
                      WHERE u.key_id = k.id
                        AND u.period_start >= date_trunc(coalesce(k.quota_period, p.quota_period,
                                                                  'day'), now(), 'UTC')), 0)
               AS quota_used
      FROM api_key k LEFT JOIN policy p ON p.name = k.policy;

-- The calls every worker counted (shared memory, from the start of the server or the last
-- stat_reset()), per saved query and policy (kind 'query'), and per policy for SQL callers wrote
-- (kind 'sql', query NULL: a statement is no name to count by, and its text may hold values the
-- caller typed), as pg_stat_statements counts statements: times in milliseconds, stddev_time the
-- population's. Only calls by a caller whose policy may call the query, or takes SQL
-- (grant_adhoc), are here (GET /metrics sums them by kind and query).
CREATE FUNCTION stat_queries(
    OUT kind text, OUT query text, OUT policy text, OUT calls bigint, OUT errors bigint,
    OUT errors_by_code jsonb, OUT rows bigint, OUT bytes bigint, OUT total_time double precision,
    OUT min_time double precision, OUT max_time double precision,
    OUT mean_time double precision, OUT stddev_time double precision)
    RETURNS SETOF record
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'querygate_stat_queries';
CREATE VIEW stat_queries AS SELECT * FROM stat_queries();
-- Each running HTTP worker since it started: its connections and calls awaiting an answer now,
-- requests answered (probes and refusals too), those with a status of 400 or more, and the time
-- it spent serving rather than waiting (milliseconds), connections it refused as it accepted them
-- (querygate.max_connections_per_ip, querygate.max_connections) and connections it closed at
-- querygate.request_timeout.
CREATE FUNCTION stat_workers(
    OUT worker integer, OUT pid integer, OUT started timestamptz, OUT connections bigint,
    OUT in_flight bigint, OUT requests bigint, OUT errors bigint, OUT busy_time double precision,
    OUT connections_refused bigint, OUT connections_timed_out bigint)
    RETURNS SETOF record
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'querygate_stat_workers';
CREATE VIEW stat_workers AS SELECT * FROM stat_workers();
-- The run history's ring since the server started: records waiting for the writer, saved,
-- dropped (the ring was full, or a batch could not be saved) and left out by the sample rate; and
-- what the rings held when the server last stopped without a clean stop (lost with them).
CREATE FUNCTION stat_history(
    OUT buffered bigint, OUT written bigint, OUT dropped bigint, OUT skipped bigint,
    OUT lost_at_restart bigint)
    RETURNS record
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'querygate_stat_history';
CREATE VIEW stat_history AS SELECT * FROM stat_history();
CREATE FUNCTION stat_reset() RETURNS void
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'querygate_stat_reset';

REVOKE ALL ON ALL TABLES IN SCHEMA querygate FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA querygate FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA querygate FROM PUBLIC;
GRANT USAGE ON SCHEMA querygate TO querygate_admin;
GRANT SELECT ON queries, query_versions, policies, keys TO querygate_admin;
GRANT EXECUTE ON FUNCTION save_query(text, text, text, jsonb, boolean), drop_query(text),
    publish_query(text, integer), rollback_query(text, integer),
    create_policy(text, regrole, boolean), drop_policy(text, boolean), grant_query(text, text),
    revoke_query(text, text),
    create_key(text, text, timestamptz, cidr[], text, double precision, integer, integer, bigint,
               text),
    revoke_key(text),
    set_limits(text, text, double precision, integer, integer, bigint, text),
    allow_tables(text, regclass[]), mask(text, text, text, boolean), unmask(text, text),
    grant_writes(text, text[]), grant_events(text, text), revoke_events(text),
    grant_adhoc(text, text[], text), revoke_adhoc(text),
    set_policy(text, text, boolean, boolean, interval, text[], text), set_jwks(jsonb), isolate_tenant(regclass, name), explain(text, text),
    stat_queries(), stat_workers(), stat_history(), stat_reset()
    TO querygate_admin;
GRANT SELECT ON stat_queries, stat_workers, stat_history TO querygate_admin;
GRANT SELECT ON audit TO querygate_admin;
GRANT SELECT ON quota_usage TO querygate_admin;
GRANT SELECT ON history TO querygate_admin;

-- Says whether HTTP is on; the notice is raised from C where the preload state is known.
CREATE FUNCTION http_status_notice() RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_http_status_notice';
REVOKE ALL ON FUNCTION http_status_notice() FROM PUBLIC;
SELECT http_status_notice();
