-- Who may send their own SQL: grant_adhoc turns ad-hoc SQL on for a policy, off by default, shown in
-- the policies view and audited. It is refused without a table allow-list (the caller writes the
-- query, so the list is the fence) and for a write operation the policy is not granted; its write
-- operations are normalised as grant_writes does; its search_path is the caller's or the one given,
-- made explicit as save_query's (a missing or unusable schema refused); calling it again replaces
-- it; revoke_adhoc turns it off; allow_tables(policy, NULL) is refused while it is on; only a role
-- that may act as the policy's role may do any of it.
\set ECHO none
\i sql/include/setup.sql
\i sql/include/as_role.sql

BEGIN;
CREATE EXTENSION querygate;
-- ah_app runs the policy; ah_member administers querygate and may act as ah_app; ah_admin
-- administers querygate and may not; ah_nobody does not administer querygate.
CREATE ROLE ah_app NOLOGIN;
CREATE ROLE ah_admin NOLOGIN;
CREATE ROLE ah_member NOLOGIN;
CREATE ROLE ah_nobody NOLOGIN;
GRANT querygate_admin TO ah_admin, ah_member;
GRANT ah_app TO ah_member;
CREATE TABLE ah_t (id int PRIMARY KEY, note text);
CREATE TABLE ah_u (id int PRIMARY KEY);
GRANT SELECT ON ah_t, ah_u TO ah_app;
CREATE SCHEMA ah_s;
GRANT USAGE ON SCHEMA ah_s TO PUBLIC;
-- A schema nobody but a superuser may use.
CREATE SCHEMA ah_hidden;

-- The policy's ad-hoc settings, as the policies view shows them.
CREATE FUNCTION pg_temp.adhoc(p text DEFAULT 'p') RETURNS text LANGUAGE sql AS $$
    SELECT format('%s | %s | %s', adhoc, coalesce(adhoc_write_ops::text, 'NULL'),
                  coalesce(adhoc_search_path, 'NULL'))
      FROM querygate.policies WHERE name = p
$$;
-- The hint of the error a statement raises (NULL when it raises none).
CREATE FUNCTION pg_temp.hint_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    hint text;
BEGIN
    EXECUTE stmt;
    RETURN NULL;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RETURN hint;
END $$;

DO $$ BEGIN PERFORM querygate.create_policy('p', 'ah_app'); END $$;
SET search_path = public;

SELECT plan(48);

-- 1. Off by default; refused without an allow-list.
SELECT is(pg_temp.adhoc(), 'f | NULL | NULL', 'a policy has no ad-hoc SQL by default');
SELECT throws_ok($$SELECT querygate.grant_adhoc('p')$$, '55000', 'policy "p" has no table allow-list',
                 'grant_adhoc without an allow-list: 55000');
SELECT is(pg_temp.hint_of($$SELECT querygate.grant_adhoc('p')$$),
          'Give the policy one with querygate.allow_tables first.', 'the hint says what to do');
SELECT is(pg_temp.adhoc(), 'f | NULL | NULL', 'and nothing changed');
SELECT throws_ok($$SELECT querygate.grant_adhoc('nope')$$, '42704', 'policy "nope" does not exist',
                 'grant_adhoc to an unknown policy: 42704');
SELECT throws_ok($$SELECT querygate.grant_adhoc(NULL)$$, '22004', 'the policy name must not be null',
                 'grant_adhoc(NULL): 22004');

-- 2. Granted with an allow-list: read-only, the caller's search_path made explicit.
DO $$ BEGIN PERFORM querygate.allow_tables('p', ARRAY['ah_t']::regclass[]); END $$;
SELECT lives_ok($$SELECT querygate.grant_adhoc('p')$$, 'grant_adhoc with an allow-list');
SELECT is(pg_temp.adhoc(), 't | {} | pg_catalog, public, pg_temp',
          'the policies view shows it: no writes, the search_path explicit (pg_catalog first, pg_temp last)');
SET search_path = ah_s, "$user", public;
SELECT lives_ok($$SELECT querygate.grant_adhoc('p')$$, 'granted again from a session with ah_s first');
RESET search_path;
SET search_path = public;
SELECT is((SELECT adhoc_search_path FROM querygate.policies WHERE name = 'p'), 'pg_catalog, ah_s, public, pg_temp',
          'the calling session''s search_path, "$user" resolved (no such schema: left out)');
SELECT lives_ok($$SELECT querygate.save_query('q', 'SELECT id FROM ah_t WHERE id = :id');
                  SELECT querygate.grant_query('p', 'q')$$, 'a query granted to the policy with ad-hoc SQL on');
SELECT is((SELECT e ? 'columns' FROM querygate.explain('p', 'q') AS e), true,
          'explain reads the policy with ad-hoc SQL on (its row decodes)');

-- 3. Write operations: only what the policy itself is granted, normalised as grant_writes does.
SELECT throws_ok($$SELECT querygate.grant_adhoc('p', '{insert}')$$, '55000', 'policy "p" may not insert',
                 'a write operation the policy is not granted: 55000');
SELECT is(pg_temp.hint_of($$SELECT querygate.grant_adhoc('p', '{insert}')$$),
          'Grant the policy the operation with querygate.grant_writes first, or leave it out.',
          'the hint says what to do');
DO $$ BEGIN PERFORM querygate.grant_writes('p', '{update}'); END $$;
SELECT throws_ok($$SELECT querygate.grant_adhoc('p', '{delete, UPDATE, insert}')$$, '55000',
                 'policy "p" may not insert, delete',
                 'every operation the policy may not use is named, in the table''s order');
SELECT throws_ok($$SELECT querygate.grant_adhoc('p', '{truncate}')$$, '22023', 'unknown write operation "truncate"',
                 'an unknown operation: 22023');
SELECT is(pg_temp.hint_of($$SELECT querygate.grant_adhoc('p', '{truncate}')$$),
          'The operations are insert, update, delete and merge.', 'the hint lists the operations');
SELECT throws_ok($$SELECT querygate.grant_adhoc('p', ARRAY[NULL]::text[])$$, '22004',
                 'write operations must not be null', 'a NULL operation: 22004');
SELECT is(pg_temp.adhoc(), 't | {} | pg_catalog, ah_s, public, pg_temp', 'the refused grants changed nothing');
DO $$ BEGIN PERFORM querygate.grant_writes('p', '{insert,update,delete}'); END $$;
SELECT lives_ok($$SELECT querygate.grant_adhoc('p', '{DELETE, update, update}')$$,
                'granted operations the policy may use, in any case and order, twice');
SELECT is((SELECT adhoc_write_ops::text FROM querygate.policies WHERE name = 'p'), '{update,delete}',
          'stored by name, once each, in the table''s order');
SELECT lives_ok($$SELECT querygate.grant_writes('p', '{insert}')$$,
                'grant_writes may narrow the policy''s operations under the ad-hoc grant');
SELECT is((SELECT write_ops::text || ' ' || adhoc_write_ops::text FROM querygate.policies WHERE name = 'p'),
          '{insert} {update,delete}', 'which keeps its own (the worker takes only what both name)');

-- 4. A search_path given: validated, made explicit the same way.
SELECT lives_ok($$SELECT querygate.grant_adhoc('p', search_path => 'ah_s, "$user", pg_catalog, public')$$,
                'a search_path given');
SELECT is(pg_temp.adhoc(), 't | {} | pg_catalog, ah_s, public, pg_temp',
          'stored explicit: pg_catalog first, "$user" resolved, pg_temp last; the write operations replaced');
SELECT lives_ok($$SELECT querygate.grant_adhoc('p', search_path => '')$$, 'an empty search_path');
SELECT is((SELECT adhoc_search_path FROM querygate.policies WHERE name = 'p'), 'pg_catalog, pg_temp',
          'is pg_catalog and pg_temp only');
SELECT throws_ok($$SELECT querygate.grant_adhoc('p', search_path => 'ah_s, ah_missing')$$, '3F000',
                 'schema "ah_missing" does not exist', 'a schema that does not exist: 3F000');
SELECT throws_ok($$SELECT querygate.grant_adhoc('p', search_path => 'ah_s ah_t')$$, '22023',
                 'invalid search_path "ah_s ah_t"', 'a search_path that is not a list of names: 22023');
SELECT is(pg_temp.as_role('ah_member', $$SELECT querygate.grant_adhoc('p', search_path => 'ah_hidden')$$),
          '42501: permission denied for schema "ah_hidden"',
          'a schema the caller may not use (PostgreSQL would leave it out without a word): 42501');
SELECT is((SELECT adhoc_search_path FROM querygate.policies WHERE name = 'p'), 'pg_catalog, pg_temp',
          'the refused paths changed nothing');

-- 5. Calling it again replaces every setting.
DO $$ BEGIN PERFORM querygate.grant_writes('p', '{insert,update}');
             PERFORM querygate.grant_adhoc('p', '{insert}', 'ah_s'); END $$;
SELECT is(pg_temp.adhoc(), 't | {insert} | pg_catalog, ah_s, pg_temp', 'granted with a write and a path');
SELECT lives_ok($$SELECT querygate.grant_adhoc('p')$$, 'granted again with the defaults');
SELECT is(pg_temp.adhoc(), 't | {} | pg_catalog, public, pg_temp', 'replaces the write operations and the path');

-- 6. The allow-list stays while ad-hoc SQL is on.
SELECT throws_ok($$SELECT querygate.allow_tables('p', NULL)$$, '55000',
                 'policy "p" has ad-hoc SQL, which needs a table allow-list',
                 'allow_tables(p, NULL) while ad-hoc SQL is on: 55000');
SELECT is(pg_temp.hint_of($$SELECT querygate.allow_tables('p', NULL)$$),
          'Turn ad-hoc SQL off first with querygate.revoke_adhoc.', 'the hint says what to do');
SELECT lives_ok($$SELECT querygate.allow_tables('p', ARRAY['ah_t', 'ah_u']::regclass[])$$,
                'another list may replace it');
SELECT throws_ok($$UPDATE querygate.policy SET allowed_tables = NULL WHERE name = 'p'$$, '23514', NULL,
                 'a direct change is refused too (the table''s CHECK)');

-- 7. Who may: a member of the policy's role, not any administrator.
SELECT is(pg_temp.as_role('ah_admin', s), '42501: permission denied to change policy "p"',
          'not a member of ah_app: ' || s)
  FROM unnest(ARRAY[$$SELECT querygate.grant_adhoc('p')$$, $$SELECT querygate.revoke_adhoc('p')$$]) AS s;
SELECT is(left(pg_temp.as_role('ah_nobody', s), 6), '42501:', 'not an administrator: ' || s)
  FROM unnest(ARRAY[$$SELECT querygate.grant_adhoc('p')$$, $$SELECT querygate.revoke_adhoc('p')$$]) AS s;
SELECT is(pg_temp.as_role('ah_member', $$SELECT querygate.grant_adhoc('p', search_path => 'ah_s')$$), 'no error',
          'a member of ah_app may grant it');

-- 8. Revoked: off, the write operations and the path cleared; then the allow-list may go.
SELECT is(pg_temp.as_role('ah_member', $$SELECT querygate.revoke_adhoc('p')$$), 'no error',
          'a member of ah_app may revoke it');
SELECT is(pg_temp.adhoc(), 'f | NULL | NULL', 'revoke_adhoc turns it off and clears its settings');
SELECT lives_ok($$SELECT querygate.allow_tables('p', NULL)$$, 'allow_tables(p, NULL) once it is off');

-- 9. The audit log: the grants and the revocation, by whom, before and after.
SELECT is((SELECT string_agg(format('%s %s %s->%s', actor, action, before->>'adhoc', after->>'adhoc'), ', ' ORDER BY at)
             FROM querygate.audit WHERE catalog = 'policy' AND policy = 'p' AND action IN ('grant_adhoc', 'revoke_adhoc')
              AND actor = 'ah_member'),
          'ah_member grant_adhoc true->true, ah_member revoke_adhoc true->false',
          'the member''s grant and revocation are in the audit log');
SELECT is((SELECT format('%s | %s', after->>'adhoc_write_ops', after->>'adhoc_search_path') FROM querygate.audit
            WHERE catalog = 'policy' AND action = 'grant_adhoc' AND actor = 'ah_member'),
          '[] | pg_catalog, ah_s, pg_temp', 'with the settings it stored');

SELECT * FROM finish();
ROLLBACK;
