-- Who may do what: PUBLIC has no privilege on the catalog tables, a role that is neither a
-- superuser nor a member of querygate_admin gets 42501 from every function and every table, a member
-- of querygate_admin can manage everything, and nobody can create a policy that runs as a role they
-- could not SET ROLE to.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE qg_nobody;
CREATE ROLE qg_admin;
CREATE ROLE qg_other;
CREATE ROLE qg_app;
GRANT querygate_admin TO qg_admin;
-- The administrator may act as the fixture policy's role (policy_actors tests one who may not).
GRANT qg_app TO qg_admin;

\i sql/include/as_role.sql

-- Fixtures made by the superuser.
DO $$
BEGIN
    PERFORM querygate.save_query('q', 'SELECT 1 AS one');
    PERFORM querygate.create_policy('p', 'qg_app');
    PERFORM querygate.grant_query('p', 'q');
    PERFORM querygate.create_key('k', 'p');
END $$;

SELECT plan(51);

-- No privileges for PUBLIC (nor for an ordinary role) on the catalog tables.
SELECT is((SELECT count(*)::int
             FROM pg_class c, aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
            WHERE c.oid = ('querygate.' || t)::regclass AND a.grantee = 0),
          0, 'PUBLIC has no privilege on querygate.' || t)
  FROM unnest(ARRAY['saved_query', 'policy', 'query_grant', 'api_key', 'audit']) AS t;
SELECT is((SELECT array_agg(p ORDER BY p)
             FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS p
            WHERE has_table_privilege('qg_nobody', 'querygate.' || t, p)),
          NULL, 'an ordinary role has no privilege on querygate.' || t)
  FROM unnest(ARRAY['saved_query', 'policy', 'query_grant', 'api_key', 'audit']) AS t;
SELECT is(pg_temp.as_role('qg_nobody', 'SELECT * FROM querygate.' || t) ~ '^42501:', true,
          'an ordinary role cannot read querygate.' || t)
  FROM unnest(ARRAY['saved_query', 'policy', 'query_grant', 'api_key', 'audit']) AS t;

-- Every SECURITY DEFINER function of the extension pins its search_path.
SELECT is((SELECT array_agg(proname::text ORDER BY proname)
             FROM pg_proc
            WHERE pronamespace = 'querygate'::regnamespace AND prosecdef
              AND NOT coalesce(array_to_string(proconfig, ',') LIKE '%search_path=%', false)),
          NULL, 'no SECURITY DEFINER function without a pinned search_path');

-- A non-administrator gets 42501 from every function, and nothing changes.
SELECT is(left(pg_temp.as_role('qg_nobody', s), 6), '42501:', 'not an administrator: ' || s)
  FROM unnest(ARRAY[
    $$SELECT querygate.save_query('n1', 'SELECT 1 AS one')$$,
    $$SELECT querygate.save_query('q', 'SELECT 2 AS two')$$,
    $$SELECT querygate.drop_query('q')$$,
    $$SELECT querygate.create_policy('n1')$$,
    $$SELECT querygate.create_policy('n2', 'qg_nobody')$$,
    $$SELECT querygate.drop_policy('p', true)$$,
    $$SELECT querygate.grant_query('p', 'q')$$,
    $$SELECT querygate.revoke_query('p', 'q')$$,
    $$SELECT querygate.create_key('n1', 'p')$$,
    $$SELECT querygate.revoke_key('k')$$]) AS s;
SELECT is((SELECT format('%s queries, %s policies, %s grants, %s keys',
                         (SELECT count(*) FROM querygate.saved_query), (SELECT count(*) FROM querygate.policy),
                         (SELECT count(*) FROM querygate.query_grant), (SELECT count(*) FROM querygate.api_key))),
          '1 queries, 1 policies, 1 grants, 1 keys', 'the refused calls changed nothing');

-- A member of querygate_admin can manage everything.
SELECT is(pg_temp.as_role('qg_admin', s), 'no error', 'querygate_admin member: ' || s)
  FROM unnest(ARRAY[
    $$SELECT querygate.save_query('aq', 'SELECT :a::int AS a')$$,
    $$SELECT querygate.save_query('q', 'SELECT 3 AS three')$$,
    $$SELECT querygate.create_policy('ap')$$,
    $$SELECT querygate.create_policy('ap2', 'qg_app')$$,
    $$SELECT querygate.grant_query('ap', 'aq')$$,
    $$SELECT querygate.grant_query('p', 'aq')$$,
    $$SELECT querygate.create_key('ak', 'ap')$$,
    $$SELECT querygate.create_key('ak2', 'p', now() + interval '1 hour')$$,
    $$SELECT querygate.revoke_key('ak')$$,
    $$SELECT querygate.revoke_query('ap', 'aq')$$,
    $$SELECT querygate.drop_policy('ap')$$,
    $$SELECT querygate.drop_policy('p', true)$$,
    $$SELECT querygate.drop_query('aq')$$]) AS s;
SELECT is(pg_temp.as_role('qg_admin', $x$DO $do$ BEGIN IF querygate.create_key('ak3', 'ap2') !~ '^qg_' THEN RAISE 'bad secret'; END IF; END $do$$x$),
          'no error', 'querygate_admin member gets a secret from create_key');

-- run_as must be a role the caller could SET ROLE to.
SELECT is(left(pg_temp.as_role('qg_admin', $$SELECT querygate.create_policy('np1', 'qg_other')$$), 6), '42501:',
          'create_policy with run_as a role the caller is not a member of: 42501');
SELECT is(left(pg_temp.as_role('qg_admin', $$SELECT querygate.create_policy('np2', 'pg_read_all_data')$$), 6), '42501:',
          'create_policy with run_as pg_read_all_data (not a member): 42501');
SELECT is(left(pg_temp.as_role('qg_admin', format('SELECT querygate.create_policy(%L, %L)', 'np3', session_user)), 6), '42501:',
          'create_policy with run_as a superuser: 42501');
GRANT qg_other TO qg_admin;
SELECT is(pg_temp.as_role('qg_admin', $$SELECT querygate.create_policy('np4', 'qg_other')$$), 'no error',
          'create_policy with run_as a role the caller is a member of');
SELECT is((SELECT count(*)::int FROM querygate.policy), 2, 'only the allowed policies exist (ap2, np4)');

-- The hash mask's secret is the superuser's alone: an administrator or a monitor who read it could
-- recompute the hash of any value they can guess.
CREATE ROLE qg_monitor IN ROLE pg_monitor;
SELECT is(left(pg_temp.as_role(r, 'SELECT * FROM querygate.mask_secret'), 6), '42501:',
          r || ' cannot read querygate.mask_secret')
  FROM unnest(ARRAY['qg_admin', 'qg_monitor']) AS r;
-- Which token issuers may name a policy: whoever may act as its role says so.
SELECT is(pg_temp.as_role('qg_admin', $$SELECT querygate.set_policy('np4', jwt_issuers => ARRAY['https://b.example', 'https://a.example', 'https://a.example'])$$),
          'no error', 'set_policy(jwt_issuers) by an administrator who may act as the role');
SELECT is((SELECT jwt_issuers FROM querygate.policy WHERE name = 'np4'), ARRAY['https://a.example', 'https://b.example'],
          'the issuers, once each, in order');
SELECT is((SELECT jwt_issuers FROM querygate.policy WHERE name = 'ap2'), '{}'::text[],
          'a policy accepts no issuer until one is named');

SELECT * FROM finish();
ROLLBACK;
