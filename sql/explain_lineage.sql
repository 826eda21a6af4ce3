-- Column masking by lineage, as querygate.explain shows it: each output column of the rewritten
-- query (views expanded) is traced to every base column it derives from, through expressions,
-- casts, concatenation, function calls, CASE, aggregates (FILTER and ORDER BY too), window
-- functions, JSON builders, whole-row references, SELECT *, set operations, subqueries, sublinks,
-- CTEs (recursive too), joins (USING columns from both sides), VALUES, LATERAL and RETURNING; the
-- strictest matching rule wins (drop > null > mask > hash). A column whose sources cannot be known
-- (a function in FROM, a record from a user-defined function) refuses the query (mask_unresolvable)
-- under a policy with any mask rule.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
SELECT plan(77);

\i sql/include/explain_fixture.sql
CREATE TABLE secrets (id int PRIMARY KEY, secret text);
CREATE VIEW user_emails AS SELECT id, lower(email) AS address FROM users;
CREATE VIEW user_emails_2 AS SELECT address AS a FROM user_emails;
CREATE FUNCTION f_users() RETURNS SETOF users LANGUAGE sql AS 'SELECT * FROM users';
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO qa_reader;

DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'qa_reader');
    PERFORM querygate.mask('p', 'users.email', 'hash');
    PERFORM querygate.mask('p', 'public.users.salary', 'null');
    PERFORM querygate.mask('p', 'orders.note', 'mask');
    PERFORM querygate.mask('p', 'orders.id', 'hash');
    PERFORM querygate.mask('p', 'secrets.*', 'drop');
    PERFORM querygate.grant_writes('p', ARRAY['insert', 'update', 'delete']);
    -- this file is about outputs: predicates on masked columns are allowed here
    PERFORM querygate.set_policy('p', 'allow');
    PERFORM querygate.create_policy('plain', 'qa_reader');
END $$;

-- The mask of each output column, in order ("none" for no mask).
CREATE FUNCTION pg_temp.masks(sql text) RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT coalesce(c->>'mask', 'none')
                   FROM jsonb_array_elements(pg_temp.ex(sql)->'columns') WITH ORDINALITY AS x(c, i)
                  ORDER BY i)
$$;
-- The sources of output column n, sorted.
CREATE FUNCTION pg_temp.sources(sql text, n int) RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT jsonb_array_elements_text(pg_temp.ex(sql)->'columns'->(n - 1)->'sources') ORDER BY 1)
$$;

-- Plain columns, SELECT *, t.*.
SELECT is(pg_temp.masks('SELECT id, email, name, salary FROM users'), ARRAY['none', 'hash', 'none', 'null'],
          'plain columns: each its own rule');
SELECT is(pg_temp.masks('SELECT * FROM users'), ARRAY['none', 'hash', 'none', 'null'], 'SELECT *');
SELECT is(pg_temp.masks('SELECT u.* FROM users u'), ARRAY['none', 'hash', 'none', 'null'], 't.*');
SELECT is(pg_temp.masks('SELECT secret, id FROM secrets'), ARRAY['drop', 'drop'], 'a pattern with * in the column');
SELECT is(pg_temp.sources('SELECT email FROM users', 1), ARRAY['public.users.email'], 'sources are schema.table.column');
SELECT is(pg_temp.masks('SELECT 1 AS one, count(*), now() FROM users'), ARRAY['none', 'none', 'none'],
          'constants and count(*) derive from nothing');
SELECT is(pg_temp.sources('SELECT count(*) FROM users', 1), '{}'::text[], 'count(*) has no sources');

-- Expressions, casts, concatenation, function calls.
SELECT is(pg_temp.masks('SELECT lower(email), upper(trim(email)) FROM users'), ARRAY['hash', 'hash'],
          'a function of a masked column is masked as a whole');
SELECT is(pg_temp.masks('SELECT email::varchar(5), salary::text, CAST(salary AS numeric) FROM users'),
          ARRAY['hash', 'null', 'null'], 'casts');
SELECT is(pg_temp.masks($$SELECT name || ' <' || email || '>', concat(name, email), format('%s', email) FROM users$$),
          ARRAY['hash', 'hash', 'hash'], 'concatenation, concat(), format()');
SELECT is(pg_temp.masks('SELECT salary + 1, -salary, salary * 0 FROM users'), ARRAY['null', 'null', 'null'],
          'arithmetic');
SELECT is(pg_temp.masks('SELECT substr(email, 1, 1), length(email), email LIKE ''%@x'' FROM users'),
          ARRAY['hash', 'hash', 'hash'], 'derived facts: a prefix, a length, a match');
SELECT is(pg_temp.masks('SELECT coalesce(email, name), greatest(email, name), nullif(name, email) FROM users'),
          ARRAY['hash', 'hash', 'hash'], 'COALESCE, GREATEST, NULLIF');
SELECT is(pg_temp.sources('SELECT lower(email) || name FROM users', 1), ARRAY['public.users.email', 'public.users.name'],
          'an expression derives from every column in it');

-- The strictest rule wins.
SELECT is(pg_temp.masks('SELECT email || salary FROM users'), ARRAY['null'], 'null beats hash');
SELECT is(pg_temp.masks('SELECT note || email FROM users, orders'), ARRAY['mask'], 'mask beats hash');
SELECT is(pg_temp.masks('SELECT s.secret || u.salary FROM users u, secrets s'), ARRAY['drop'], 'drop beats null');

-- CASE.
SELECT is(pg_temp.masks($$SELECT CASE WHEN salary > 100 THEN 'high' ELSE 'low' END FROM users$$), ARRAY['null'],
          'CASE: a condition on a masked column');
SELECT is(pg_temp.masks('SELECT CASE id WHEN 1 THEN email ELSE name END FROM users'), ARRAY['hash'],
          'CASE: a masked result');

-- Aggregates and window functions.
SELECT is(pg_temp.masks('SELECT max(email), sum(salary), array_agg(email), count(DISTINCT email) FROM users'),
          ARRAY['hash', 'null', 'hash', 'hash'], 'aggregates');
SELECT is(pg_temp.masks($$SELECT string_agg(name, ',' ORDER BY email) FROM users$$), ARRAY['hash'],
          'an aggregate ordered by a masked column');
SELECT is(pg_temp.masks('SELECT count(*) FILTER (WHERE salary > 10) FROM users'), ARRAY['null'],
          'an aggregate filtered on a masked column');
SELECT is(pg_temp.masks('SELECT name, max(salary) FROM users GROUP BY name'), ARRAY['none', 'null'],
          'an aggregate per group');
SELECT is(pg_temp.masks('SELECT first_value(email) OVER (ORDER BY id), lag(salary) OVER (ORDER BY id), row_number() OVER (ORDER BY id) FROM users'),
          ARRAY['hash', 'null', 'none'], 'window functions');
SELECT is(pg_temp.masks('SELECT sum(salary) OVER (PARTITION BY name) FROM users'), ARRAY['null'],
          'a windowed aggregate');

-- JSON builders and whole-row references.
SELECT is(pg_temp.masks($$SELECT json_build_object('e', email), jsonb_build_object('n', name), jsonb_build_array(salary) FROM users$$),
          ARRAY['hash', 'none', 'null'], 'json_build_object, jsonb_build_array');
SELECT is(pg_temp.masks('SELECT row_to_json(u), to_jsonb(u), to_json(u.*) FROM users u'),
          ARRAY['null', 'null', 'null'], 'row_to_json(t), to_jsonb(t), to_json(t.*): every column, strictest wins');
SELECT is(pg_temp.sources('SELECT to_jsonb(u) FROM users u', 1),
          ARRAY['public.users.email', 'public.users.id', 'public.users.name', 'public.users.salary'],
          'a whole-row reference derives from every column');
SELECT is(pg_temp.masks('SELECT u FROM users u'), ARRAY['null'], 'SELECT t FROM t');
SELECT is(pg_temp.masks('SELECT json_agg(u) FROM users u'), ARRAY['null'], 'json_agg(t)');
SELECT is(pg_temp.masks('SELECT ROW(email, name) FROM users'), ARRAY['hash'], 'ROW(...)');
SELECT is(pg_temp.masks('SELECT s FROM (SELECT id, name FROM users) s'), ARRAY['none'],
          'a whole-row reference to a subquery: only its columns');
SELECT is(pg_temp.masks($$SELECT to_jsonb(s) FROM (SELECT id, email FROM users) s$$), ARRAY['hash'],
          'to_jsonb of a subquery row');

-- Subqueries, sublinks, CTEs.
SELECT is(pg_temp.masks('SELECT e, n FROM (SELECT lower(email) AS e, name AS n FROM users) s'), ARRAY['hash', 'none'],
          'a subquery in FROM');
SELECT is(pg_temp.masks('SELECT x FROM (SELECT y AS x FROM (SELECT salary AS y FROM users) a) b'), ARRAY['null'],
          'nested subqueries');
SELECT is(pg_temp.masks('SELECT (SELECT max(email) FROM users) AS m'), ARRAY['hash'], 'a scalar sublink');
SELECT is(pg_temp.masks('SELECT ARRAY(SELECT email FROM users)'), ARRAY['hash'], 'an ARRAY() sublink');
SELECT is(pg_temp.masks('SELECT o.id IN (SELECT salary FROM users) FROM orders o'), ARRAY['null'],
          'an IN sublink derives from its subselect');
SELECT is(pg_temp.masks('SELECT (SELECT u.email FROM users u WHERE u.id = o.user_id) FROM orders o'), ARRAY['hash'],
          'a correlated sublink');
SELECT is(pg_temp.masks('WITH c AS (SELECT email AS e, name FROM users) SELECT e, name FROM c'), ARRAY['hash', 'none'],
          'a CTE');
SELECT is(pg_temp.masks('WITH a AS (SELECT salary AS s FROM users), b AS (SELECT s + 1 AS t FROM a) SELECT t FROM b'),
          ARRAY['null'], 'a CTE over a CTE');
SELECT is(pg_temp.masks('WITH c AS (SELECT email FROM users) SELECT (SELECT max(email) FROM c)'), ARRAY['hash'],
          'a CTE referenced from a sublink');
SELECT is(pg_temp.masks('WITH RECURSIVE r(n, e) AS (SELECT 1, email FROM users UNION ALL SELECT n + 1, e FROM r WHERE n < 3) SELECT n, e FROM r'),
          ARRAY['none', 'hash'], 'a recursive CTE');
SELECT is(pg_temp.masks('WITH RECURSIVE r(a, b) AS (SELECT name, email FROM users UNION ALL SELECT b, a FROM r) SELECT a FROM r'),
          ARRAY['hash'], 'a recursive CTE whose arms swap columns');

-- Set operations.
SELECT is(pg_temp.masks('SELECT name FROM users UNION SELECT note FROM orders'), ARRAY['mask'], 'UNION');
SELECT is(pg_temp.masks('SELECT id, name FROM users UNION ALL SELECT id, email FROM users'), ARRAY['none', 'hash'],
          'UNION ALL: column by column');
SELECT is(pg_temp.masks('SELECT name FROM users INTERSECT SELECT email FROM users'), ARRAY['hash'], 'INTERSECT');
SELECT is(pg_temp.masks('SELECT name FROM users EXCEPT SELECT email FROM users'), ARRAY['hash'], 'EXCEPT');
SELECT is(pg_temp.masks('SELECT x FROM (SELECT name FROM users UNION SELECT name FROM users UNION SELECT email FROM users) s(x)'),
          ARRAY['hash'], 'a set operation in a subquery');

-- Joins.
SELECT is(pg_temp.masks('SELECT u.email, o.amount FROM users u JOIN orders o ON o.user_id = u.id'), ARRAY['hash', 'none'],
          'JOIN ... ON');
SELECT is(pg_temp.masks('SELECT id, name FROM users JOIN orders USING (id)'), ARRAY['hash', 'none'],
          'JOIN USING: the merged column derives from both sides (orders.id is masked)');
SELECT is(pg_temp.sources('SELECT id FROM users JOIN orders USING (id)', 1), ARRAY['public.orders.id', 'public.users.id'],
          'JOIN USING: both sources');
SELECT is(pg_temp.masks('SELECT id FROM users LEFT JOIN orders USING (id)'), ARRAY['hash'], 'LEFT JOIN USING');
SELECT is(pg_temp.masks('SELECT id FROM users FULL JOIN orders USING (id)'), ARRAY['hash'], 'FULL JOIN USING');
SELECT is(pg_temp.masks('SELECT id FROM users NATURAL JOIN secrets'), ARRAY['drop'], 'NATURAL JOIN');
SELECT is(pg_temp.masks('SELECT j FROM (users JOIN orders USING (id)) j'), ARRAY['null'], 'a whole-row reference to a join');

-- VALUES, LATERAL, functions in FROM.
SELECT is(pg_temp.masks($$SELECT * FROM (VALUES (1, 'x'), (2, 'y')) v(a, b)$$), ARRAY['none', 'none'], 'VALUES of constants');
SELECT is(pg_temp.masks('SELECT v.e FROM (VALUES (1), ((SELECT max(salary) FROM users))) v(e)'), ARRAY['null'],
          'VALUES: a column derives from every row');
SELECT is(pg_temp.masks('SELECT v.e FROM users u, LATERAL (VALUES (u.email)) v(e)'), ARRAY['hash'], 'LATERAL VALUES');
SELECT is(pg_temp.masks('SELECT x.e FROM users u, LATERAL (SELECT upper(u.email) AS e) x'), ARRAY['hash'], 'a LATERAL subquery');
SELECT is(pg_temp.masks('SELECT g FROM generate_series(1, 3) g'), ARRAY['none'],
          'generate_series in FROM: a pure built-in, traced through its arguments');
SELECT is(pg_temp.masks($$SELECT part FROM users u, unnest(string_to_array(u.email, '@')) part$$), ARRAY['hash'],
          'unnest in FROM over a masked column');
SELECT is(pg_temp.refusal('SELECT id FROM f_users()'), 'mask_unresolvable', 'a user-defined function in FROM: mask_unresolvable');
SELECT is(pg_temp.ex('SELECT id FROM f_users()')->'columns'->0->>'unresolvable', 'a function in FROM',
          'explain says why the column cannot be traced');
SELECT is(pg_temp.refusal($$SELECT word FROM ts_stat('SELECT to_tsvector(email) FROM users')$$), 'mask_unresolvable',
          'a built-in function in FROM that runs a query: mask_unresolvable');
SELECT is(pg_temp.refusal('SELECT (f_user(1)).email'), 'mask_unresolvable', 'a record from a user-defined function');
SELECT is(pg_temp.refusal('SELECT u.name FROM users u, f_users() f WHERE f.id = u.id'), 'none',
          'a function in FROM that no output uses');
SELECT is(pg_temp.refusal('SELECT id FROM f_users()', 'plain'), 'none', 'a policy without mask rules does not care');

-- Views are expanded: rules on the base table apply through them.
SELECT is(pg_temp.masks('SELECT * FROM user_emails'), ARRAY['none', 'hash'], 'a view');
SELECT is(pg_temp.masks('SELECT a FROM user_emails_2'), ARRAY['hash'], 'a view over a view');
SELECT is(pg_temp.masks('SELECT v FROM user_emails v'), ARRAY['hash'], 'a whole-row reference to a view');

-- Writes with RETURNING return the values written.
SELECT is(pg_temp.masks('UPDATE users SET name = :n WHERE id = :id RETURNING email, name'), ARRAY['hash', 'none'],
          'UPDATE ... RETURNING');
SELECT is(pg_temp.masks('UPDATE users SET name = email WHERE id = :id RETURNING name'), ARRAY['hash'],
          'UPDATE ... RETURNING a column set from a masked one');
SELECT is(pg_temp.masks('INSERT INTO orders (id, amount) SELECT id + 1000, salary FROM users RETURNING amount'), ARRAY['null'],
          'INSERT ... SELECT ... RETURNING: the value inserted');
SELECT is(pg_temp.masks('DELETE FROM users WHERE id = :id RETURNING *'), ARRAY['none', 'hash', 'none', 'null'],
          'DELETE ... RETURNING *');
SELECT is(pg_temp.masks('WITH d AS (DELETE FROM users WHERE id = :id RETURNING email) SELECT * FROM d'), ARRAY['hash'],
          'a data-modifying CTE''s RETURNING');
SELECT is(pg_temp.masks('INSERT INTO orders (id, amount) VALUES (:id, 1) ON CONFLICT (id) DO UPDATE SET amount = excluded.amount + orders.amount RETURNING amount, id'),
          ARRAY['none', 'hash'], 'INSERT ... ON CONFLICT DO UPDATE ... RETURNING');

SELECT * FROM finish();
ROLLBACK;
