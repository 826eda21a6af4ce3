-- Writes, as querygate.explain shows them: what a statement writes comes from the analyzed tree at
-- every level (data-modifying CTEs count), and a write the policy was not granted refuses the query
-- (write_op_not_allowed, naming the operation). Also: the order of the policy's checks (allow-list,
-- writes, unresolvable outputs, masked predicates), returns_rows, and the rest of explain's answer.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
SELECT plan(37);

CREATE ROLE qa_writer NOLOGIN;
CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance int);
CREATE TABLE audit (id serial PRIMARY KEY, account int, delta int);
CREATE VIEW account_balances AS SELECT id, balance FROM accounts;
CREATE FUNCTION f_accounts() RETURNS SETOF accounts LANGUAGE sql AS 'SELECT * FROM accounts';
CREATE FUNCTION f_write() RETURNS int LANGUAGE sql VOLATILE AS 'INSERT INTO audit (account, delta) VALUES (0, 0) RETURNING id';
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO qa_writer;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO qa_writer;

DO $$ BEGIN PERFORM querygate.create_policy('p', 'qa_writer'); END $$;

\i sql/include/explain_helpers.sql
CREATE FUNCTION pg_temp.writes(sql text) RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT jsonb_array_elements_text(pg_temp.ex(sql)->'writes'))
$$;

-- What each statement writes.
SELECT is(pg_temp.writes('SELECT * FROM accounts'), '{}'::text[], 'SELECT writes nothing');
SELECT is(pg_temp.writes('SELECT * FROM accounts FOR UPDATE'), '{}'::text[], 'SELECT ... FOR UPDATE writes nothing');
SELECT is(pg_temp.writes('INSERT INTO audit (account, delta) VALUES (:a, :d)'), ARRAY['insert'], 'INSERT');
SELECT is(pg_temp.writes('UPDATE accounts SET balance = balance + :d WHERE id = :id'), ARRAY['update'], 'UPDATE');
SELECT is(pg_temp.writes('DELETE FROM accounts WHERE id = :id'), ARRAY['delete'], 'DELETE');
SELECT is(pg_temp.writes('MERGE INTO accounts a USING (SELECT :id::int AS id) s ON a.id = s.id WHEN MATCHED THEN UPDATE SET balance = 0'),
          ARRAY['merge'], 'MERGE');
SELECT is(pg_temp.writes('INSERT INTO accounts VALUES (:id, :o, 0) ON CONFLICT (id) DO UPDATE SET balance = 0'),
          ARRAY['insert'], 'INSERT ... ON CONFLICT DO UPDATE');
SELECT is(pg_temp.writes('UPDATE account_balances SET balance = 0 WHERE id = :id'), ARRAY['update'],
          'UPDATE of an updatable view');
SELECT is(pg_temp.writes('WITH d AS (UPDATE accounts SET balance = 0 WHERE id = :id RETURNING id) SELECT * FROM d'),
          ARRAY['update'], 'a data-modifying CTE in a SELECT');
SELECT is(pg_temp.writes('WITH d AS (DELETE FROM audit) SELECT 1'), ARRAY['delete'],
          'a data-modifying CTE that is never referenced');
SELECT is(pg_temp.writes('WITH a AS (INSERT INTO audit (account, delta) VALUES (:id, 0) RETURNING account), b AS (DELETE FROM accounts WHERE id IN (SELECT account FROM a) RETURNING id) SELECT count(*) FROM b'),
          ARRAY['insert', 'delete'], 'several data-modifying CTEs');
SELECT is(pg_temp.writes('WITH u AS (UPDATE accounts SET balance = 0 WHERE id = :id RETURNING id, balance) INSERT INTO audit (account, delta) SELECT id, balance FROM u'),
          ARRAY['insert', 'update'], 'a data-modifying CTE under an INSERT');
SELECT is(pg_temp.writes('SELECT f_write()'), '{}'::text[],
          'a volatile function''s writes are not in the tree (the read-only transaction stops them)');

-- A read-only policy refuses every write.
SELECT is(pg_temp.refusal('SELECT * FROM accounts'), 'none', 'a read-only policy: SELECT');
SELECT is(pg_temp.refusal('UPDATE accounts SET balance = 0 WHERE id = :id'), 'write_op_not_allowed',
          'a read-only policy: UPDATE');
SELECT matches(pg_temp.ex('UPDATE accounts SET balance = 0 WHERE id = :id')->'refused'->>'reason', 'update',
               'the refusal names the operation');
SELECT is(pg_temp.refusal('INSERT INTO audit (account, delta) VALUES (:a, :d)'), 'write_op_not_allowed',
          'a read-only policy: INSERT');
SELECT is(pg_temp.refusal('WITH d AS (DELETE FROM audit RETURNING id) SELECT * FROM d'), 'write_op_not_allowed',
          'a read-only policy: a data-modifying CTE');
SELECT is(pg_temp.refusal('MERGE INTO accounts a USING (SELECT :id::int AS id) s ON a.id = s.id WHEN MATCHED THEN DELETE'),
          'write_op_not_allowed', 'a read-only policy: MERGE');

-- Granted operations only.
DO $$ BEGIN PERFORM querygate.grant_writes('p', ARRAY['update']); END $$;
SELECT is(pg_temp.refusal('UPDATE accounts SET balance = 0 WHERE id = :id'), 'none', 'a granted UPDATE');
SELECT is(pg_temp.refusal('DELETE FROM accounts WHERE id = :id'), 'write_op_not_allowed', 'DELETE was not granted');
SELECT is(pg_temp.ex('WITH u AS (UPDATE accounts SET balance = 0 WHERE id = :id RETURNING id) DELETE FROM audit WHERE account IN (SELECT id FROM u)')->'refused'->>'reason',
          'the policy does not allow delete', 'a granted UPDATE in a CTE does not let its DELETE through');
SELECT is(pg_temp.refusal('UPDATE account_balances SET balance = 0 WHERE id = :id'), 'none', 'a granted UPDATE through a view');
DO $$ BEGIN PERFORM querygate.grant_writes('p', NULL); END $$;
SELECT is(pg_temp.refusal('UPDATE accounts SET balance = 0 WHERE id = :id'), 'write_op_not_allowed',
          'grant_writes(NULL) makes the policy read-only again');

-- returns_rows and the columns of writes.
SELECT is((pg_temp.ex('UPDATE accounts SET balance = 0 WHERE id = :id')->>'returns_rows')::boolean, false,
          'a write without RETURNING returns no rows');
SELECT is(pg_temp.ex('UPDATE accounts SET balance = 0 WHERE id = :id')->'columns', '[]'::jsonb,
          'a write without RETURNING has no columns');
SELECT is((pg_temp.ex('UPDATE accounts SET balance = 0 WHERE id = :id RETURNING id, balance')->>'returns_rows')::boolean, true,
          'a write with RETURNING returns rows');
SELECT is(jsonb_array_length(pg_temp.ex('UPDATE accounts SET balance = 0 WHERE id = :id RETURNING id, balance')->'columns'), 2,
          'a write with RETURNING: its columns');
SELECT is((pg_temp.ex('VALUES (1), (2)')->>'returns_rows')::boolean, true, 'VALUES returns rows');

-- The order of the checks: allow-list, writes, unresolvable outputs, masked predicates.
DO $$
BEGIN
    PERFORM querygate.allow_tables('p', ARRAY['accounts']::regclass[]);
    PERFORM querygate.mask('p', 'accounts.owner', 'mask');
END $$;
SELECT is(pg_temp.refusal('DELETE FROM audit'), 'table_not_allowed', 'the allow-list comes before the writes');
-- (pg_get_keywords() is a built-in function in FROM that reads no table: its columns cannot be
-- traced, and the allow-list has nothing to say about it.)
SELECT is(pg_temp.refusal('UPDATE accounts SET balance = 0 WHERE owner = :o RETURNING (SELECT max(word) FROM pg_get_keywords())'),
          'write_op_not_allowed', 'the writes come before unresolvable outputs');
SELECT is(pg_temp.refusal('SELECT word FROM pg_get_keywords() WHERE word IN (SELECT owner FROM accounts WHERE owner = :o)'),
          'mask_unresolvable', 'unresolvable outputs come before masked predicates');
SELECT is(pg_temp.refusal('SELECT id FROM accounts WHERE owner = :o'), 'mask_predicate', 'and then masked predicates');

-- The rest of the answer.
DO $$ BEGIN PERFORM querygate.save_query('q', 'SELECT id, owner FROM accounts'); END $$;
SELECT is(querygate.explain('p', 'q') - 'columns' - 'predicates',
          jsonb_build_object('query', 'q', 'policy', 'p', 'run_as', 'qa_writer', 'granted', false,
                             'tables', jsonb_build_array('public.accounts'), 'writes', '[]'::jsonb,
                             'returns_rows', true, 'predicate_unresolvable', null, 'refused', null,
                             'untrusted', null, 'missing_privilege', null, 'computed', '[]'::jsonb,
                             'params', '[]'::jsonb,
                             'row_checks', '[]'::jsonb),
          'explain answers the query, the policy, its role, the grant, tables, writes, trust, parameters, row checks and the refusal');
SELECT is(querygate.explain('p', 'q')->'columns',
          '[{"name": "id", "sources": ["public.accounts.id"], "mask": null, "unresolvable": null},
            {"name": "owner", "sources": ["public.accounts.owner"], "mask": "mask", "unresolvable": null}]'::jsonb,
          'each column: its name, sources, mask and whether it is unresolvable');
DO $$ BEGIN PERFORM querygate.grant_query('p', 'q'); END $$;
SELECT is((querygate.explain('p', 'q')->>'granted')::boolean, true, 'granted once the query is granted');
SELECT is((SELECT count(*)::int FROM audit), 0, 'explain ran nothing');

SELECT * FROM finish();
ROLLBACK;
