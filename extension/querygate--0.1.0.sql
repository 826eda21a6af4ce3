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
-- `param_types[i]`. `search_path` is the saver's, so the worker resolves names exactly as the saver
-- did. `revision` changes on every save, so workers know when a kept plan is stale.
CREATE TABLE saved_query (
    name          text PRIMARY KEY,
    sql           text NOT NULL,
    prepared_sql  text NOT NULL,
    param_names   text[] NOT NULL,
    param_types   regtype[] NOT NULL,
    search_path   text NOT NULL,
    description   text,
    revision      bigint NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE SEQUENCE saved_query_revision;

-- A policy is a named set of grants shared by keys; its queries run as `run_as`.
CREATE TABLE policy (
    name        text PRIMARY KEY,
    run_as      oid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
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
    CHECK (revoked_at IS NOT NULL OR policy IS NOT NULL)
);
CREATE UNIQUE INDEX api_key_active_name ON api_key (name) WHERE revoked_at IS NULL;

-- pg_dump keeps the catalog's rows.
SELECT pg_catalog.pg_extension_config_dump('saved_query', '');
SELECT pg_catalog.pg_extension_config_dump('saved_query_revision', '');
SELECT pg_catalog.pg_extension_config_dump('policy', '');
SELECT pg_catalog.pg_extension_config_dump('query_grant', '');
SELECT pg_catalog.pg_extension_config_dump('api_key', '');

-- Every change to the catalog tells the HTTP workers at commit (a rolled-back change tells nobody).
CREATE FUNCTION catalog_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_catalog_changed';

CREATE TRIGGER saved_query_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON saved_query
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER policy_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON policy
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER query_grant_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON query_grant
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER api_key_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_key
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();

-- Administration. The functions check the caller themselves (superuser or querygate_admin member)
-- and write the catalog with a fixed, safe search_path; EXECUTE is also withheld from PUBLIC.
CREATE FUNCTION save_query(name text, sql text, description text DEFAULT NULL) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_save_query';
CREATE FUNCTION drop_query(name text) RETURNS void
    LANGUAGE c STRICT AS 'MODULE_PATHNAME', 'querygate_drop_query';
CREATE FUNCTION create_policy(name text, run_as regrole DEFAULT NULL) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_create_policy';
CREATE FUNCTION drop_policy(name text, "cascade" boolean DEFAULT false) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_drop_policy';
CREATE FUNCTION grant_query(policy text, query text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_grant_query';
CREATE FUNCTION revoke_query(policy text, query text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_revoke_query';
CREATE FUNCTION create_key(name text, policy text, expires_at timestamptz DEFAULT NULL) RETURNS text
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_create_key';
CREATE FUNCTION revoke_key(name text) RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_revoke_key';

-- Read-only views for administrators: everything but the key hashes.
CREATE VIEW queries AS
    SELECT name, sql, description,
           (SELECT coalesce(jsonb_agg(jsonb_build_object('name', n, 'type', t::text) ORDER BY i), '[]')
              FROM unnest(param_names, param_types) WITH ORDINALITY AS p(n, t, i)) AS params,
           created_at, updated_at
      FROM saved_query;
CREATE VIEW policies AS
    SELECT p.name, p.run_as::regrole AS run_as, p.created_at,
           array(SELECT g.query FROM query_grant g WHERE g.policy = p.name ORDER BY g.query) AS queries
      FROM policy p;
CREATE VIEW keys AS
    SELECT name, policy, created_at, expires_at, revoked_at,
           revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) AS active
      FROM api_key;

REVOKE ALL ON ALL TABLES IN SCHEMA querygate FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA querygate FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA querygate FROM PUBLIC;
GRANT USAGE ON SCHEMA querygate TO querygate_admin;
GRANT SELECT ON queries, policies, keys TO querygate_admin;
GRANT EXECUTE ON FUNCTION save_query(text, text, text), drop_query(text),
    create_policy(text, regrole), drop_policy(text, boolean), grant_query(text, text),
    revoke_query(text, text), create_key(text, text, timestamptz), revoke_key(text)
    TO querygate_admin;

-- Says whether HTTP is on; the notice is raised from C where the preload state is known.
CREATE FUNCTION http_status_notice() RETURNS void
    LANGUAGE c AS 'MODULE_PATHNAME', 'querygate_http_status_notice';
REVOKE ALL ON FUNCTION http_status_notice() FROM PUBLIC;
SELECT http_status_notice();
