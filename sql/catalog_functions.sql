-- The SQL API: each function exists with the contract's signature, works on its happy path, and
-- fails with the contract's SQLSTATE (throws_ok) on each error.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE qg_cf_role NOLOGIN;
SELECT plan(85);

-- Signatures (names, argument types, return types).
SELECT has_schema('querygate');
SELECT has_role('querygate_admin');
SELECT has_table('querygate', t, 'catalog table querygate.' || t)
  FROM unnest(ARRAY['saved_query', 'policy', 'query_grant', 'api_key']) AS t;
-- The contract's functions: leading arguments (names and types) as in the contract, the same
-- number of required arguments (anything added later must have a default), the return type.
SELECT is((SELECT string_agg(d, ' | ')
             FROM (SELECT format('%s(%s) returns %s; %s required', p.proname,
                                 (SELECT string_agg(p.proargnames[i] || ' ' || format_type(p.proargtypes[i - 1], NULL), ', ' ORDER BY i)
                                    FROM generate_series(1, least(e.nargs, p.pronargs)) AS i),
                                 format_type(p.prorettype, NULL), p.pronargs - p.pronargdefaults) AS d
                     FROM pg_proc p
                    WHERE p.pronamespace = 'querygate'::regnamespace AND p.proname = e.name) AS x),
          e.expected, 'signature of querygate.' || e.name)
  FROM (VALUES
    ('save_query', 3, 'save_query(name text, sql text, description text) returns void; 2 required'),
    ('drop_query', 1, 'drop_query(name text) returns void; 1 required'),
    ('create_policy', 2, 'create_policy(name text, run_as regrole) returns void; 1 required'),
    ('drop_policy', 2, 'drop_policy(name text, cascade boolean) returns void; 1 required'),
    ('grant_query', 2, 'grant_query(policy text, query text) returns void; 2 required'),
    ('revoke_query', 2, 'revoke_query(policy text, query text) returns void; 2 required'),
    ('create_key', 3, 'create_key(name text, policy text, expires_at timestamp with time zone) returns text; 2 required'),
    ('revoke_key', 1, 'revoke_key(name text) returns void; 1 required')) AS e(name, nargs, expected);

-- Defaults: the optional arguments can be left out.
SELECT lives_ok($$SELECT querygate.save_query('q1', 'SELECT 1 AS one')$$, 'save_query without description');
SELECT throws_ok($$SELECT querygate.create_policy('p0')$$, '42501', NULL,
                 'create_policy without run_as by a superuser (it would run as one): 42501');
SELECT lives_ok($$SELECT querygate.create_policy('p1', allow_superuser => true)$$,
                'create_policy without run_as, asking for a superuser role by name');
SELECT lives_ok($$SELECT querygate.create_key('k1', 'p1')$$, 'create_key without expires_at');
SELECT lives_ok($$SELECT querygate.drop_policy('p1', true)$$, 'drop_policy with cascade (positional)');

-- save_query / drop_query.
SELECT lives_ok($$SELECT querygate.save_query('q1', 'SELECT 2 AS two', 'replaced')$$,
                'save_query with an existing name replaces it');
SELECT is((SELECT count(*)::int FROM querygate.saved_query), 1, 'replacing does not add a row');
SELECT lives_ok($$SELECT querygate.save_query('q1', 'SELECT 3 AS three')$$, 're-saving without a description');
SELECT is((SELECT description FROM querygate.saved_query WHERE name = 'q1'), 'replaced',
          're-saving without a description keeps the one it had');
SELECT lives_ok($$SELECT querygate.save_query('q1', 'SELECT 2 AS two', '')$$, 're-saving with an empty one');
SELECT is((SELECT description FROM querygate.saved_query WHERE name = 'q1'), NULL,
          'an empty description clears it');
SELECT lives_ok($$SELECT querygate.save_query(name => 'q2', sql => 'SELECT :a::int AS a', description => 'named notation')$$,
                'save_query in named notation (name, sql, description)');
SELECT lives_ok($$SELECT querygate.save_query('Q.2-x_3', 'SELECT 1 AS one')$$, 'name with letters, digits, ".", "-", "_"');
SELECT lives_ok($$SELECT querygate.save_query('9lives', 'SELECT 1 AS one')$$, 'name starting with a digit');
SELECT lives_ok(format('SELECT querygate.save_query(%L, %L)', repeat('a', 63), 'SELECT 1 AS one'), 'name of 63 characters');
SELECT is((SELECT count(*)::int FROM querygate.saved_query), 5, 'five saved queries');
SELECT throws_ok(format('SELECT querygate.save_query(%L, %L)', repeat('a', 64), 'SELECT 1'), '22023', NULL, 'name of 64 characters: 22023');
SELECT throws_ok($$SELECT querygate.save_query('', 'SELECT 1')$$, '22023', NULL, 'empty name: 22023');
SELECT throws_ok($$SELECT querygate.save_query('a b', 'SELECT 1')$$, '22023', NULL, 'name with a space: 22023');
SELECT throws_ok($$SELECT querygate.save_query('-ab', 'SELECT 1')$$, '22023', NULL, 'name starting with "-": 22023');
SELECT throws_ok($$SELECT querygate.save_query('.ab', 'SELECT 1')$$, '22023', NULL, 'name starting with ".": 22023');
SELECT throws_ok($$SELECT querygate.save_query('a/b', 'SELECT 1')$$, '22023', NULL, 'name with "/": 22023');
SELECT throws_ok($$SELECT querygate.save_query('caf' || chr(233), 'SELECT 1')$$, '22023', NULL, 'name with a non-ASCII letter: 22023');
SELECT throws_ok($$SELECT querygate.save_query('a;b', 'SELECT 1')$$, '22023', NULL, 'name with ";": 22023');
SELECT lives_ok($$SELECT querygate.drop_query('9lives')$$, 'drop_query');
SELECT is((SELECT count(*)::int FROM querygate.saved_query), 4, 'drop_query removes the query');
SELECT throws_ok($$SELECT querygate.drop_query('9lives')$$, '42704', NULL, 'drop_query of an unknown query: 42704');

-- create_policy / drop_policy.
SELECT lives_ok($$SELECT querygate.create_policy('p1', 'qg_cf_role')$$, 'create_policy');
SELECT throws_ok($$SELECT querygate.create_policy('p1', 'qg_cf_role')$$, '42710', NULL, 'create_policy with an existing name: 42710');
SELECT lives_ok($$SELECT querygate.create_policy(name => 'p2', run_as => 'pg_monitor')$$, 'create_policy in named notation with run_as');
SELECT throws_ok($$SELECT querygate.create_policy('bad name', 'qg_cf_role')$$, '22023', NULL, 'create_policy with an invalid name: 22023');
SELECT throws_ok($$SELECT querygate.drop_policy('nope')$$, '42704', NULL, 'drop_policy of an unknown policy: 42704');

-- grant_query / revoke_query.
SELECT lives_ok($$SELECT querygate.grant_query('p1', 'q1')$$, 'grant_query');
SELECT lives_ok($$SELECT querygate.grant_query('p1', 'q1')$$, 'granting twice is not an error');
SELECT lives_ok($$SELECT querygate.grant_query(policy => 'p1', query => 'q2')$$, 'grant_query in named notation');
SELECT is((SELECT count(*)::int FROM querygate.query_grant), 2, 'two grants (granting twice adds no row)');
SELECT throws_ok($$SELECT querygate.grant_query('nope', 'q1')$$, '42704', NULL, 'grant_query to an unknown policy: 42704');
SELECT throws_ok($$SELECT querygate.grant_query('p1', 'nope')$$, '42704', NULL, 'grant_query of an unknown query: 42704');
SELECT lives_ok($$SELECT querygate.revoke_query('p1', 'q2')$$, 'revoke_query');
SELECT is((SELECT count(*)::int FROM querygate.query_grant), 1, 'revoke_query removes the grant');
SELECT throws_ok($$SELECT querygate.revoke_query('nope', 'q1')$$, '42704', NULL, 'revoke_query from an unknown policy: 42704');
SELECT throws_ok($$SELECT querygate.revoke_query('p1', 'nope')$$, '42704', NULL, 'revoke_query of an unknown query: 42704');

-- drop_query also removes its grants.
SELECT lives_ok($$SELECT querygate.grant_query('p2', 'q1')$$, 'grant q1 to a second policy');
SELECT lives_ok($$SELECT querygate.drop_query('q1')$$, 'drop a granted query');
SELECT is((SELECT count(*)::int FROM querygate.query_grant), 0, 'drop_query removed its grants');

-- create_key / revoke_key.
SELECT lives_ok($$SELECT querygate.create_key('k1', 'p1')$$, 'create_key');
SELECT throws_ok($$SELECT querygate.create_key('k1', 'p1')$$, '42710', NULL, 'create_key with an existing name: 42710');
SELECT throws_ok($$SELECT querygate.create_key('k2', 'nope')$$, '42704', NULL, 'create_key for an unknown policy: 42704');
SELECT throws_ok($$SELECT querygate.create_key('bad name', 'p1')$$, '22023', NULL, 'create_key with an invalid name: 22023');
SELECT lives_ok($$SELECT querygate.create_key(name => 'k3', policy => 'p1', expires_at => now() + interval '1 day')$$,
                'create_key in named notation with expires_at');
SELECT lives_ok($$SELECT querygate.revoke_key('k1')$$, 'revoke_key');
SELECT throws_ok($$SELECT querygate.revoke_key('nope')$$, '42704', NULL, 'revoke_key of an unknown key: 42704');

-- grant_events / revoke_events: off by default, shown in the policies view, audited.
SELECT is((SELECT events FROM querygate.policies WHERE name = 'p1'), false, 'a policy may not watch events by default');
SELECT lives_ok($$SELECT querygate.grant_events('p1')$$, 'grant_events');
SELECT is((SELECT events FROM querygate.policies WHERE name = 'p1'), true, 'the policies view shows it');
SELECT is((SELECT action || ' ' || (before ->> 'events') || '->' || (after ->> 'events') FROM querygate.audit
            WHERE catalog = 'policy' AND policy = 'p1' AND operation = 'update' ORDER BY at DESC LIMIT 1),
          'grant_events false->true', 'grant_events is in the audit log, before and after');
SELECT lives_ok($$SELECT querygate.revoke_events(policy => 'p1')$$, 'revoke_events in named notation');
SELECT throws_ok($$SELECT querygate.grant_events('nope')$$, '42704', NULL, 'grant_events to an unknown policy: 42704');

-- set_policy(hash_scope => ...): a policy's hashes are its own until it names a shared scope.
SELECT is((SELECT hash_scope FROM querygate.policies WHERE name = 'p1'), NULL, 'no shared hash scope by default');
SELECT lives_ok($$SELECT querygate.set_policy('p1', hash_scope => 'crm_join')$$, 'set_policy names a shared hash scope');
SELECT is((SELECT hash_scope FROM querygate.policies WHERE name = 'p1'), 'crm_join', 'the policies view shows it');
SELECT throws_ok($$SELECT querygate.set_policy('p1', hash_scope => 'CRM-join')$$, '22023',
                 'invalid hash scope "CRM-join"', 'a scope that is not a lower-case name: 22023');
SELECT lives_ok($$SELECT querygate.set_policy('p1', hash_scope => '')$$, 'hash_scope '''' returns to its own');
SELECT is((SELECT hash_scope FROM querygate.policies WHERE name = 'p1'), NULL, 'and the view shows none');

-- drop_policy is refused while active keys use it, unless cascade.
SELECT throws_ok($$SELECT querygate.drop_policy('p1')$$, '2BP01', NULL, 'drop_policy with an active key: 2BP01');
SELECT lives_ok($$SELECT querygate.drop_policy(name => 'p1', cascade => true)$$, 'drop_policy with cascade => true');
SELECT throws_ok($$SELECT querygate.create_key('k4', 'p1')$$, '42704', NULL, 'the dropped policy is gone');
SELECT lives_ok($$SELECT querygate.create_policy('p3', 'qg_cf_role');
                  SELECT querygate.create_key('k5', 'p3');
                  SELECT querygate.revoke_key('k5')$$, 'a policy whose only key is revoked');
SELECT lives_ok($$SELECT querygate.drop_policy('p3')$$, 'drop_policy without cascade when no key is active');

-- A grant to a policy that is then dropped does not survive it.
SELECT lives_ok($$SELECT querygate.grant_query('p2', 'q2'); SELECT querygate.drop_policy('p2')$$, 'drop a policy with a grant');
SELECT is((SELECT count(*)::int FROM querygate.query_grant), 0, 'drop_policy removed its grants');

SELECT * FROM finish();
ROLLBACK;
