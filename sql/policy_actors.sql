-- Who may make a policy act: an administrator may only make a policy do what they could do
-- themselves. Every function that changes what a policy can run or reveal requires a superuser or a
-- member of the policy's run_as role (the rule of SET ROLE) and says so; a query may only be
-- granted to a policy whose role its saver could act as, and re-saving a granted query re-checks
-- every policy; a superuser or BYPASSRLS run_as is refused unless asked for by name; the code a
-- query runs as the policy's role (functions, domains, the schemas of its search_path) must come
-- from roles that could act as it (the trojan-function case); set_jwks is a superuser's.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
-- pa_admin administers querygate but is not a member of pa_app, the policy's role;
-- pa_member administers querygate and is a member of pa_app.
CREATE ROLE pa_app NOLOGIN;
CREATE ROLE pa_admin NOLOGIN;
CREATE ROLE pa_member NOLOGIN;
CREATE ROLE pa_bypass NOLOGIN BYPASSRLS;
CREATE ROLE pa_repl NOLOGIN REPLICATION;
CREATE ROLE pa_prog NOLOGIN IN ROLE pg_execute_server_program;
CREATE ROLE pa_later NOLOGIN;
GRANT querygate_admin TO pa_admin, pa_member;
GRANT pa_app, pa_later TO pa_member;
CREATE TABLE pa_t (id int PRIMARY KEY, secret text);
CREATE TABLE pa_u (id int PRIMARY KEY);
GRANT SELECT ON pa_t, pa_u TO pa_app, pa_admin, pa_member;
-- A schema pa_admin owns (and creates in), and a trojan there: SECURITY INVOKER, so it would run
-- with the rights of whoever calls it.
CREATE SCHEMA pa_schema AUTHORIZATION pa_admin;
GRANT USAGE ON SCHEMA pa_schema TO PUBLIC;
SET ROLE pa_admin;
CREATE FUNCTION pa_schema.leak() RETURNS text LANGUAGE sql AS $$ SELECT current_user::text $$;
CREATE FUNCTION pa_schema.upper(text) RETURNS text LANGUAGE sql AS $$ SELECT 'trojan' $$;
CREATE FUNCTION pa_schema.definer() RETURNS text LANGUAGE sql SECURITY DEFINER AS $$ SELECT current_user::text $$;
CREATE FUNCTION pa_schema.pa_check(int) RETURNS boolean LANGUAGE sql AS $$ SELECT $1 > 0 $$;
CREATE DOMAIN pa_schema.pa_dom AS int CHECK (pa_schema.pa_check(VALUE));
CREATE FUNCTION pa_schema.pa_eq(int, int) RETURNS boolean LANGUAGE sql AS $$ SELECT $1 = $2 $$;
CREATE OPERATOR pa_schema.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = pa_schema.pa_eq);
CREATE FUNCTION pa_schema.pa_add(int, int) RETURNS int LANGUAGE sql AS $$ SELECT $1 + $2 $$;
CREATE AGGREGATE pa_schema.pa_sum(int) (SFUNC = pa_schema.pa_add, STYPE = int);
RESET ROLE;
-- A schema of pa_admin's that pa_app may not even use (yet).
CREATE SCHEMA pa_hidden AUTHORIZATION pa_admin;
-- Trusted objects (the superuser's) built on pa_admin's: a domain over its domain, an operator
-- whose negator is its operator, an aggregate whose transition function is its function.
CREATE DOMAIN public.pa_outer AS pa_schema.pa_dom;
CREATE FUNCTION public.pa_ne(int, int) RETURNS boolean LANGUAGE sql AS $$ SELECT $1 <> $2 $$;
CREATE OPERATOR public.!=== (LEFTARG = int, RIGHTARG = int, FUNCTION = public.pa_ne,
                            NEGATOR = OPERATOR(pa_schema.===));
CREATE AGGREGATE public.pa_sum2(int) (SFUNC = pa_schema.pa_add, STYPE = int);
CREATE SCHEMA pa_gone;
CREATE FUNCTION public.pa_trusted() RETURNS text LANGUAGE sql AS $$ SELECT current_user::text $$;

\i sql/include/as_role.sql

-- The catalog as one text, to show that refused calls changed nothing.
CREATE FUNCTION pg_temp.catalog() RETURNS text LANGUAGE sql AS $$
    SELECT format('%s | %s | %s | %s | %s',
        (SELECT string_agg(format('%s:%s:%s', name, sql, saved_by), ',' ORDER BY name) FROM querygate.saved_query),
        (SELECT string_agg(format('%s:%s:%s:%s:%s:%s', name, run_as, allow_superuser, allowed_tables, write_ops, mask_predicates), ',' ORDER BY name) FROM querygate.policy),
        (SELECT string_agg(policy || ':' || query, ',' ORDER BY policy, query) FROM querygate.query_grant),
        (SELECT string_agg(format('%s:%s:%s', name, policy, revoked_at IS NULL), ',' ORDER BY name) FROM querygate.api_key),
        (SELECT string_agg(policy || ':' || pattern || ':' || action, ',' ORDER BY policy, pattern) FROM querygate.mask_rule))
$$;

DO $$
BEGIN
    PERFORM querygate.save_query('q', 'SELECT id FROM pa_t WHERE id = :id');
    PERFORM querygate.save_query('q2', 'SELECT id FROM pa_u');
    PERFORM querygate.create_policy('p', 'pa_app');
    PERFORM querygate.grant_query('p', 'q');
    PERFORM querygate.create_key('k', 'p');
    PERFORM querygate.mask('p', 'pa_t.secret', 'hash');
END $$;
SELECT pg_temp.catalog() AS before \gset

SELECT plan(96);

-- 1. An administrator who is not a member of the policy's role: every change is refused, and says why.
SELECT is(pg_temp.as_role('pa_admin', s),
          '42501: permission denied to change policy "p"', 'not a member of pa_app: ' || s)
  FROM unnest(ARRAY[
    $$SELECT querygate.grant_query('p', 'q2')$$,
    $$SELECT querygate.revoke_query('p', 'q')$$,
    $$SELECT querygate.create_key('k2', 'p')$$,
    $$SELECT querygate.revoke_key('k')$$,
    $$SELECT querygate.mask('p', 'pa_t.id', 'null')$$,
    $$SELECT querygate.unmask('p', 'pa_t.secret')$$,
    $$SELECT querygate.allow_tables('p', NULL)$$,
    $$SELECT querygate.allow_tables('p', ARRAY['pa_t']::regclass[])$$,
    $$SELECT querygate.grant_writes('p', '{insert}')$$,
    $$SELECT querygate.set_policy('p', mask_predicates => 'allow')$$,
    $$SELECT querygate.set_policy('p', allow_superuser => true)$$,
    $$SELECT querygate.drop_policy('p', true)$$,
    $$SELECT querygate.explain('p', 'q')$$,
    $$SELECT querygate.save_query('q', 'SELECT id, secret FROM pa_t WHERE id = :id')$$,
    $$SELECT querygate.drop_query('q')$$]) AS s;
SELECT is(pg_temp.catalog(), :'before', 'the refused calls changed nothing');
SELECT alike(pg_temp.as_role('pa_admin', $$SELECT querygate.create_key('k2', 'p')$$, detail => true),
            '%runs its queries as role "pa_app". Only a superuser or a member of "pa_app" may change%',
            'the error says who may');
-- What does not touch an existing policy stays open to any administrator.
SELECT is(pg_temp.as_role('pa_admin', s), 'no error', 'any administrator: ' || s)
  FROM unnest(ARRAY[
    $$SELECT querygate.save_query('by_admin', 'SELECT pa_schema.leak() AS who')$$,
    $$SELECT querygate.save_query('q2', 'SELECT id FROM pa_u ORDER BY id')$$,
    $$SELECT querygate.create_policy('own', 'pa_admin')$$]) AS s;

-- 2. A member of the policy's role may do each of them.
SELECT is(pg_temp.as_role('pa_member', s), 'no error', 'a member of pa_app: ' || s)
  FROM unnest(ARRAY[
    $$SELECT querygate.save_query('q2', 'SELECT id FROM pa_u')$$,
    $$SELECT querygate.grant_query('p', 'q2')$$,
    $$SELECT querygate.revoke_query('p', 'q2')$$,
    $$SELECT querygate.create_key('k2', 'p')$$,
    $$SELECT querygate.revoke_key('k2')$$,
    $$SELECT querygate.mask('p', 'pa_t.unused', 'null')$$,
    $$SELECT querygate.unmask('p', 'pa_t.unused')$$,
    $$SELECT querygate.allow_tables('p', ARRAY['pa_t']::regclass[])$$,
    $$SELECT querygate.allow_tables('p', NULL)$$,
    $$SELECT querygate.grant_writes('p', NULL)$$,
    $$SELECT querygate.set_policy('p', mask_predicates => 'refuse')$$,
    $$SELECT querygate.explain('p', 'q')$$,
    $$SELECT querygate.save_query('q', 'SELECT id FROM pa_t WHERE id = :id')$$]) AS s;

-- 3. The saver: a query saved by someone who cannot act as the policy's role is not granted to it,
-- not even by a superuser, until it is saved again by someone who can.
SELECT is((SELECT saved_by::text FROM querygate.queries WHERE name = 'by_admin'), 'pa_admin', 'queries shows who saved a query');
SELECT throws_ok($$SELECT querygate.grant_query('p', 'by_admin')$$, '42501',
                 'saved query "by_admin" was saved by role "pa_admin", which cannot act as "pa_app"',
                 'a superuser cannot grant a query saved by a non-member');
SELECT is(pg_temp.as_role('pa_admin', $$SELECT querygate.grant_query('own', 'by_admin')$$), 'no error',
          'its saver may grant it to a policy of their own role');
-- Re-saving by a member is not enough when the query calls the trojan (section 5), so a plain one:
SELECT is(pg_temp.as_role('pa_admin', $$SELECT querygate.save_query('plain', 'SELECT id FROM pa_t')$$), 'no error',
          'pa_admin saves another query');
SELECT throws_ok($$SELECT querygate.grant_query('p', 'plain')$$, '42501',
                 'saved query "plain" was saved by role "pa_admin", which cannot act as "pa_app"',
                 'which pa_app cannot be granted');
SELECT lives_ok($$SELECT querygate.save_query('plain', 'SELECT id FROM pa_t')$$, 'until a superuser saves it again');
SELECT lives_ok($$SELECT querygate.grant_query('p', 'plain')$$, 'and then it can be granted');

-- 4. Re-saving a granted query re-checks every policy it is granted to.
SELECT is(pg_temp.as_role('pa_admin', $$SELECT querygate.save_query('plain', 'SELECT id FROM pa_u')$$),
          '42501: permission denied to change policy "p"', 're-saving a granted query needs every policy''s role');
DO $$ BEGIN PERFORM querygate.allow_tables('p', ARRAY['pa_t']::regclass[]); END $$;
SELECT throws_ok($$SELECT querygate.save_query('plain', 'SELECT id FROM pa_u')$$, '42501',
                 'policy "p" would refuse saved query "plain": the policy does not allow the table public.pa_u',
                 're-saving re-checks the allow-list of every policy it is granted to');
SELECT is((SELECT sql FROM querygate.saved_query WHERE name = 'plain'), 'SELECT id FROM pa_t', 'and keeps the old text');
-- A draft is checked at publish time as if its saver granted it: a member who publishes it does not
-- lend the draft's author their membership.
SELECT is(pg_temp.as_role('pa_admin', $$SELECT querygate.save_query('plain', 'SELECT id, secret FROM pa_t', publish => false)$$),
          'no error', 'a non-member may save a draft of a granted query');
SELECT is((SELECT saved_by::text FROM querygate.query_versions WHERE name = 'plain' AND draft),
          'pa_admin', 'query_versions shows who saved the draft');
SELECT is(pg_temp.as_role('pa_member', $$SELECT querygate.publish_query('plain')$$),
          '42501: saved query "plain" was saved by role "pa_admin", which cannot act as "pa_app"',
          'a member publishing it is refused: the draft''s author could not have granted it');
SELECT is((SELECT sql FROM querygate.saved_query WHERE name = 'plain'), 'SELECT id FROM pa_t',
          'and callers still get the published text');
SELECT is(pg_temp.as_role('pa_member', $$SELECT querygate.save_query('plain', 'SELECT id FROM pa_t WHERE id > 0', publish => false)$$)
          || ' / ' || pg_temp.as_role('pa_member', $$SELECT querygate.publish_query('plain')$$),
          'no error / no error', 'a member''s own draft is published');
SELECT is((SELECT saved_by::text FROM querygate.queries WHERE name = 'plain'), 'pa_member',
          'saved by the member who wrote it');
DO $$ BEGIN PERFORM querygate.allow_tables('p', NULL); END $$;

-- 5. Superuser and BYPASSRLS roles: refused unless asked for by name.
SELECT throws_ok(format('SELECT querygate.create_policy(%L, %L)', 'su', session_user), '42501',
                 format('policy "su" would run as "%s", a privileged role', session_user),
                 'create_policy with a superuser run_as: 42501');
SELECT throws_ok($$SELECT querygate.create_policy('su')$$, '42501',
                 format('policy "su" would run as "%s", a privileged role (without run_as, a policy runs as its creator)', session_user),
                 'create_policy by a superuser without run_as (it would run as the superuser): 42501');
SELECT throws_ok($$SELECT querygate.create_policy('by', 'pa_bypass')$$, '42501',
                 'policy "by" would run as "pa_bypass", a privileged role',
                 'create_policy with a BYPASSRLS run_as: 42501');
SELECT throws_ok($$SELECT querygate.create_policy('rep', 'pa_repl')$$, '42501',
                 'policy "rep" would run as "pa_repl", a privileged role',
                 'create_policy with a REPLICATION run_as (logical decoding reads every table): 42501');
SELECT throws_ok($$SELECT querygate.create_policy('prog', 'pa_prog')$$, '42501',
                 'policy "prog" would run as "pa_prog", a privileged role',
                 'create_policy with a run_as that may run server programs: 42501');
SELECT lives_ok(format('SELECT querygate.create_policy(%L, %L, allow_superuser => true)', 'su', session_user),
                'allow_superuser => true asks for it by name');
SELECT is((SELECT allow_superuser FROM querygate.policies WHERE name = 'su'), true, 'policies shows allow_superuser');
SELECT lives_ok($$SELECT querygate.create_policy('later', 'pa_later')$$, 'a policy whose role is ordinary');
ALTER ROLE pa_later SUPERUSER;
SELECT throws_ok($$SELECT querygate.grant_query('later', 'q')$$, '42501',
                 'policy "later" runs as "pa_later", a privileged role',
                 'granting to it once its role became a superuser: 42501');
SELECT is(pg_temp.as_role('pa_member', $$SELECT querygate.set_policy('later', allow_superuser => true)$$), 'no error',
          'a member of its role may allow it');
SELECT lives_ok($$SELECT querygate.grant_query('later', 'q')$$, 'and then the grant is taken');
ALTER ROLE pa_later NOSUPERUSER;

-- 6. Code a query runs as the policy's role comes from roles that could act as it. (p stops
-- masking, so that a function's untraceable result is not refused for that reason instead.)
DO $$ BEGIN PERFORM querygate.unmask('p', 'pa_t.secret'); END $$;
SELECT lives_ok($$SELECT querygate.save_query('trojan', 'SELECT pa_schema.leak() AS who')$$,
                'a superuser saves a query that calls pa_admin''s function');
SELECT throws_ok($$SELECT querygate.grant_query('p', 'trojan')$$, '42501',
                 'saved query "trojan" runs code that policy "p"''s role does not trust',
                 'granting it: the function''s owner cannot act as pa_app');
SELECT alike(querygate.explain('p', 'trojan')->>'untrusted',
            'function pa_schema.leak() is owned by role "pa_admin", which cannot act as "pa_app"',
            'explain says which function and whose');
SELECT is(querygate.explain('p', 'trojan')->'refused'->>'code', 'untrusted_code', 'and the call would be refused');
SELECT lives_ok($$SELECT querygate.save_query('defined', 'SELECT pa_schema.definer() AS who')$$,
                'a SECURITY DEFINER function of pa_admin');
SELECT throws_ok($$SELECT querygate.grant_query('p', 'defined')$$, '42501',
                 'saved query "defined" runs code that policy "p"''s role does not trust',
                 'SECURITY DEFINER is no exemption: it sees the call''s data and can change its session');
SELECT lives_ok($$SELECT querygate.save_query('trusted', 'SELECT public.pa_trusted() AS who')$$,
                'a function owned by a superuser');
SELECT lives_ok($$SELECT querygate.grant_query('p', 'trusted')$$, 'is trusted');
-- The search_path: a schema pa_admin can create in, before public, would let pa_admin shadow names.
SET search_path = pa_schema, public;
SELECT lives_ok($$SELECT querygate.save_query('shadow', 'SELECT upper(secret) AS s FROM pa_t')$$,
                'saved with pa_schema on the search_path');
RESET search_path;
SELECT is((SELECT search_path FROM querygate.queries WHERE name = 'shadow'), 'pg_catalog, pa_schema, public, pg_temp',
          'the stored search_path is explicit: pg_catalog first, pg_temp last');
SELECT is(querygate.explain('p', 'shadow')->'columns'->0->'sources', '["public.pa_t.secret"]'::jsonb,
          'pg_catalog first: upper() is the built-in, not pa_schema.upper');
SELECT throws_ok($$SELECT querygate.grant_query('p', 'shadow')$$, '42501',
                 'saved query "shadow" runs code that policy "p"''s role does not trust',
                 'granting it: pa_admin may create in a schema of its search_path');
SELECT alike(querygate.explain('p', 'shadow')->>'untrusted',
            'role "pa_admin" may create objects in schema "pa_schema"%',
            'explain names the schema and the role');
GRANT pa_app TO pa_admin;
SELECT is(querygate.explain('p', 'shadow')->>'untrusted', NULL, 'once pa_admin may act as pa_app, it is trusted');
REVOKE pa_app FROM pa_admin;
SET search_path = "$user", public;
SELECT lives_ok($$SELECT querygate.save_query('user_path', 'SELECT 1 AS one')$$, 'saved with "$user", public');
RESET search_path;
SELECT is((SELECT search_path FROM querygate.queries WHERE name = 'user_path'), 'pg_catalog, public, pg_temp',
          '"$user" is resolved when saved (no such schema: left out)');
CREATE FUNCTION pg_temp.save_with_empty_path() RETURNS void LANGUAGE plpgsql SET search_path = '' AS
    $$ BEGIN PERFORM querygate.save_query('empty_path', 'SELECT 1 AS one'); END $$;
SELECT lives_ok($$SELECT pg_temp.save_with_empty_path()$$, 'saved with an empty search_path');
SELECT is((SELECT search_path FROM querygate.queries WHERE name = 'empty_path'), 'pg_catalog, pg_temp',
          'an empty search_path stays empty but for pg_catalog and pg_temp');

-- Every way code reaches the call: each query below is refused for p, explain saying why.
CREATE FUNCTION pg_temp.untrusted(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM querygate.save_query('probe', sql);
    RETURN querygate.explain('p', 'probe')->>'untrusted';
END $$;
SELECT alike(pg_temp.untrusted(q), want, what)
  FROM (VALUES
    ('SELECT :x::pa_schema.pa_dom AS v', 'domain pa_schema.pa_dom is owned by role "pa_admin"%',
     'a parameter of a domain type (its checks run when the value is bound)'),
    ('SELECT 5::pa_schema.pa_dom AS v', 'domain pa_schema.pa_dom is owned by role "pa_admin"%',
     'a cast to the domain'),
    ('SELECT 5::pa_outer AS v', 'domain pa_schema.pa_dom is owned by role "pa_admin"%',
     'a trusted domain over pa_admin''s domain'),
    ('SELECT ARRAY[5]::pa_schema.pa_dom[] AS v', 'domain pa_schema.pa_dom is owned by role "pa_admin"%',
     'an array of the domain'),
    ('SELECT v FROM json_to_record(''{"v": 5}'') AS r(v pa_schema.pa_dom)', 'domain pa_schema.pa_dom is owned by role "pa_admin"%',
     'a column definition list of the domain'),
    ('SELECT 1 OPERATOR(pa_schema.===) 1 AS v', 'function pa_schema.pa_eq(integer,integer) is owned by role "pa_admin"%',
     'an operator of pa_admin''s'),
    ('SELECT 1 OPERATOR(public.!===) 2 AS v', 'function pa_schema.pa_eq(integer,integer) is owned by role "pa_admin"%',
     'a trusted operator whose negator is pa_admin''s'),
    ('SELECT pa_schema.pa_sum(id) AS v FROM pa_t', 'function pa_schema.pa_sum(integer) is owned by role "pa_admin"%',
     'an aggregate of pa_admin''s'),
    ('SELECT pa_sum2(id) AS v FROM pa_t', 'function pa_schema.pa_add(integer,integer) is owned by role "pa_admin"%',
     'a trusted aggregate whose transition function is pa_admin''s'),
    ('SELECT query_to_xml(''SELECT pa_schema.leak()'', false, false, '''')::text AS x', 'function pa_schema.leak() is owned by role "pa_admin"%',
     'SQL given as text to query_to_xml calls pa_admin''s function'),
    ('SELECT query_to_xml(:sql, false, false, '''')::text AS x', 'query_to_xml(text,boolean,boolean,text) runs SQL text that is not a constant of the query',
     'SQL text chosen at run time'),
    ('SELECT ts_rewrite(''a''::tsquery, :sql)::text AS x', 'ts_rewrite(tsquery,text) runs SQL text that is not a constant of the query',
     'ts_rewrite''s SQL text chosen at run time')
  ) AS t(q, want, what);
SELECT is(pg_temp.untrusted($$SELECT query_to_xml('SELECT 1 AS one', false, false, '')::text AS x$$), NULL,
          'constant SQL text that calls nothing untrusted is trusted');
SET search_path = pa_hidden, public;
SELECT lives_ok($$SELECT querygate.save_query('hidden', 'SELECT id FROM pa_t')$$,
                'saved with a schema pa_app may not use (nor see) on the search_path');
RESET search_path;
SELECT alike(querygate.explain('p', 'hidden')->>'untrusted', 'role "pa_admin" may create objects in schema "pa_hidden"%',
             'judged all the same: a later GRANT USAGE must not open a way in');
SET search_path = pa_gone, public;
SELECT lives_ok($$SELECT querygate.save_query('gone', 'SELECT id FROM pa_t')$$, 'saved with schema pa_gone on the search_path');
RESET search_path;
DROP SCHEMA pa_gone;
SELECT is(querygate.explain('p', 'gone')->>'untrusted',
          'schema "pa_gone" of the query''s search_path does not exist, so whoever creates it would decide what the query''s names mean',
          'a schema of the stored search_path that was dropped');

-- 7. The JWKS document chooses who may sign tokens for any policy: a superuser's.
SELECT is(pg_temp.as_role('pa_member', $$SELECT querygate.set_jwks('{"keys": []}')$$),
          '42501: permission denied to set the JWKS document', 'set_jwks by a non-superuser administrator: 42501');

SELECT * FROM finish();
ROLLBACK;
