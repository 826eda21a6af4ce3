-- Table allow-lists, as querygate.explain shows them: every relation a saved query reads or writes,
-- at every level (joins, subqueries in FROM, sublinks in WHERE, the select list, HAVING and
-- RETURNING, CTEs, LATERAL, set operations, DML and MERGE targets, data-modifying CTEs), must be on
-- the policy's list; a view counts as itself, so a view over a table that is not listed is allowed
-- through the view only. explain analyzes as the policy's run_as role with the query's stored
-- search_path, and refuses unknown policies and queries (42704) and non-administrators (42501).
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
SELECT plan(44);

CREATE ROLE qa_reader NOLOGIN;
CREATE TABLE users (id int PRIMARY KEY, email text, name text);
CREATE TABLE orders (id int PRIMARY KEY, user_id int, amount int);
CREATE TABLE secrets (id int PRIMARY KEY, secret text);
CREATE VIEW user_names AS SELECT id, name FROM users;
CREATE VIEW secret_ids AS SELECT id FROM secrets;
CREATE SCHEMA other;
CREATE TABLE other.secrets (id int, secret text);
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO qa_reader;
GRANT USAGE ON SCHEMA other TO qa_reader;
GRANT SELECT ON other.secrets TO qa_reader;

DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'qa_reader');
    PERFORM querygate.allow_tables('p', ARRAY['orders', 'user_names']::regclass[]);
    PERFORM querygate.grant_writes('p', ARRAY['insert', 'update', 'delete', 'merge']);
END $$;

\i sql/include/explain_helpers.sql
-- The tables explain lists, sorted.
CREATE FUNCTION pg_temp.tables(sql text) RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT jsonb_array_elements_text(pg_temp.ex(sql)->'tables') ORDER BY 1)
$$;

-- Allowed: listed tables and views, at any level.
SELECT is(pg_temp.refusal('SELECT id, amount FROM orders WHERE id = :id'), 'none', 'a listed table');
SELECT is(pg_temp.refusal('SELECT * FROM user_names'), 'none',
          'a listed view over a table that is not listed: the view counts as itself');
SELECT is(pg_temp.tables('SELECT * FROM user_names'), ARRAY['public.user_names'],
          'explain lists the view, not its base table');
SELECT is(pg_temp.refusal('SELECT n.name, o.amount FROM user_names n JOIN orders o ON o.user_id = n.id'),
          'none', 'a join of listed relations');
SELECT is(pg_temp.refusal('SELECT * FROM orders WHERE user_id IN (SELECT id FROM user_names)'), 'none',
          'a listed view in a sublink');
SELECT is(pg_temp.refusal('WITH w AS (SELECT id FROM user_names) SELECT * FROM w'), 'none',
          'a listed view in a CTE');

-- Refused: a relation that is not listed, wherever it hides.
SELECT is(pg_temp.refusal('SELECT * FROM users'), 'table_not_allowed', 'a table that is not listed');
SELECT matches(pg_temp.ex('SELECT * FROM users')->'refused'->>'reason', 'public\.users',
               'the refusal names the table, schema-qualified');
SELECT is(pg_temp.refusal('SELECT * FROM secret_ids'), 'table_not_allowed',
          'a view that is not listed, over a table that is not listed');
SELECT is(pg_temp.refusal('SELECT o.* FROM orders o JOIN users u ON u.id = o.user_id'), 'table_not_allowed',
          'a join');
SELECT is(pg_temp.refusal('SELECT * FROM orders JOIN users USING (id)'), 'table_not_allowed',
          'a join with USING');
SELECT is(pg_temp.refusal('SELECT * FROM (SELECT * FROM users) s'), 'table_not_allowed',
          'a subquery in FROM');
SELECT is(pg_temp.refusal('WITH w AS (SELECT * FROM users) SELECT * FROM w'), 'table_not_allowed',
          'a CTE');
SELECT is(pg_temp.refusal('WITH w AS (SELECT * FROM users) SELECT * FROM orders'), 'table_not_allowed',
          'a CTE that is never referenced');
SELECT is(pg_temp.refusal('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < (SELECT count(*) FROM secrets)) SELECT * FROM r'),
          'table_not_allowed', 'a sublink in a recursive CTE');
SELECT is(pg_temp.refusal('SELECT * FROM orders WHERE user_id IN (SELECT id FROM users)'), 'table_not_allowed',
          'a sublink in WHERE (IN)');
SELECT is(pg_temp.refusal('SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM secrets s WHERE s.id = o.id)'),
          'table_not_allowed', 'a sublink in WHERE (EXISTS)');
SELECT is(pg_temp.refusal('SELECT id, (SELECT secret FROM secrets s WHERE s.id = o.id) FROM orders o'),
          'table_not_allowed', 'a sublink in the select list');
SELECT is(pg_temp.refusal('SELECT user_id, count(*) FROM orders GROUP BY user_id HAVING count(*) > (SELECT count(*) FROM secrets)'),
          'table_not_allowed', 'a sublink in HAVING');
SELECT is(pg_temp.refusal('SELECT * FROM orders ORDER BY (SELECT max(id) FROM secrets)'), 'table_not_allowed',
          'a sublink in ORDER BY');
SELECT is(pg_temp.refusal('SELECT * FROM orders o, LATERAL (SELECT secret FROM secrets s WHERE s.id = o.id) x'),
          'table_not_allowed', 'LATERAL');
SELECT is(pg_temp.refusal('SELECT * FROM orders o LEFT JOIN LATERAL (SELECT * FROM users u WHERE u.id = o.user_id) x ON true'),
          'table_not_allowed', 'LEFT JOIN LATERAL');
SELECT is(pg_temp.refusal('SELECT id FROM orders UNION SELECT id FROM secrets'), 'table_not_allowed', 'UNION');
SELECT is(pg_temp.refusal('SELECT id FROM orders INTERSECT SELECT id FROM users'), 'table_not_allowed', 'INTERSECT');
SELECT is(pg_temp.refusal('SELECT id FROM orders EXCEPT ALL SELECT id FROM secrets'), 'table_not_allowed', 'EXCEPT');
SELECT is(pg_temp.refusal('SELECT * FROM orders WHERE id = ANY (ARRAY(SELECT id FROM secrets))'), 'table_not_allowed',
          'an ARRAY() sublink');
SELECT is(pg_temp.refusal('SELECT * FROM orders WHERE id IN (SELECT id FROM user_names WHERE id IN (SELECT id FROM secrets))'),
          'table_not_allowed', 'a sublink inside a sublink');
SELECT is(pg_temp.refusal('SELECT * FROM other.secrets'), 'table_not_allowed', 'a table in another schema');
SELECT matches(pg_temp.ex('SELECT * FROM other.secrets')->'refused'->>'reason', 'other\.secrets',
               'the refusal names the other schema');

-- Writes: the target and everything the statement reads, RETURNING included.
SELECT is(pg_temp.refusal('INSERT INTO secrets (id, secret) VALUES (1, :s)'), 'table_not_allowed', 'an INSERT target');
SELECT is(pg_temp.refusal('UPDATE orders SET amount = 0 WHERE user_id IN (SELECT id FROM users)'),
          'table_not_allowed', 'a sublink in an UPDATE''s WHERE');
SELECT is(pg_temp.refusal('UPDATE orders SET amount = 0 RETURNING (SELECT secret FROM secrets LIMIT 1)'),
          'table_not_allowed', 'a sublink in RETURNING');
SELECT is(pg_temp.refusal('DELETE FROM orders o USING secrets s WHERE s.id = o.id RETURNING s.secret'),
          'table_not_allowed', 'DELETE ... USING ... RETURNING');
SELECT is(pg_temp.refusal('INSERT INTO orders (id, user_id) SELECT id, id FROM users'), 'table_not_allowed',
          'INSERT ... SELECT');
SELECT is(pg_temp.refusal('WITH d AS (DELETE FROM secrets RETURNING id) SELECT * FROM orders'), 'table_not_allowed',
          'a data-modifying CTE');
SELECT is(pg_temp.refusal('MERGE INTO orders o USING secrets s ON s.id = o.id WHEN MATCHED THEN DELETE'),
          'table_not_allowed', 'a MERGE source');
SELECT is(pg_temp.refusal('MERGE INTO secrets s USING orders o ON s.id = o.id WHEN MATCHED THEN DELETE'),
          'table_not_allowed', 'a MERGE target');
SELECT is(pg_temp.tables('WITH d AS (UPDATE orders SET amount = 1 RETURNING user_id) SELECT * FROM user_names n WHERE n.id IN (SELECT user_id FROM d) UNION SELECT id, secret FROM secrets'),
          ARRAY['public.orders', 'public.secrets', 'public.user_names'],
          'explain lists every relation of a statement, once');

-- Without a list, anything goes.
DO $$ BEGIN PERFORM querygate.allow_tables('p', NULL); END $$;
SELECT is(pg_temp.refusal('SELECT * FROM users, secrets'), 'none', 'allow_tables(NULL) removes the list');

-- explain analyzes as the call does: with the query's stored search_path, as the run_as role.
SET search_path = other, public;
DO $$ BEGIN PERFORM querygate.save_query('q', 'SELECT * FROM secrets'); END $$;
RESET search_path;
SELECT is(array(SELECT jsonb_array_elements_text(querygate.explain('p', 'q')->'tables')),
          ARRAY['other.secrets'], 'names resolve with the search_path stored when the query was saved');
REVOKE USAGE ON SCHEMA other FROM qa_reader;
DO $$ BEGIN PERFORM querygate.save_query('q', 'SELECT * FROM other.secrets'); END $$;
SELECT throws_ok($$SELECT querygate.explain('p', 'q')$$, '42501', 'permission denied for schema other',
                 'the analysis runs as the policy''s role (no USAGE on the schema: 42501)');

-- Errors.
SELECT throws_ok($$SELECT querygate.explain('nope', 'q')$$, '42704', NULL, 'an unknown policy: 42704');
SELECT throws_ok($$SELECT querygate.explain('p', 'nope')$$, '42704', NULL, 'an unknown query: 42704');
SET LOCAL ROLE qa_reader;
SELECT throws_ok($$SELECT querygate.explain('p', 'q')$$, '42501', NULL, 'a non-administrator: 42501');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
