-- Inference through predicates, as querygate.explain shows it: a masked column used in WHERE, JOIN
-- ON or USING, GROUP BY, HAVING, ORDER BY (with LIMIT), DISTINCT ON, a window's PARTITION BY or
-- ORDER BY, or a LIMIT computed from it, at any level of the rewritten query (subqueries, CTEs,
-- sublinks, LATERAL, set operation arms, views, the WHERE of a write), lets a caller learn it, so
-- the policy refuses the query with mask_predicate, unless set_policy(..., mask_predicates =>
-- 'allow'). A predicate column whose sources cannot be known counts as masked. Row-level security
-- quals are the database's own and do not count.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
SELECT plan(42);

\i sql/include/explain_fixture.sql
CREATE VIEW user_emails AS SELECT id, lower(email) AS address FROM users;
CREATE VIEW acme_users AS SELECT id, name FROM users WHERE email LIKE '%@acme.example';
CREATE FUNCTION f_users() RETURNS SETOF users LANGUAGE sql AS 'SELECT * FROM users';
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO qa_reader;
-- Row-level security on orders that looks at users.email.
ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY orders_by_email ON orders
    USING (user_id IN (SELECT id FROM users WHERE email = current_user));

DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'qa_reader');
    PERFORM querygate.mask('p', 'users.email', 'hash');
    PERFORM querygate.grant_writes('p', ARRAY['update', 'delete']);
    PERFORM querygate.create_policy('plain', 'qa_reader');
END $$;

CREATE FUNCTION pg_temp.predicates(sql text) RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT jsonb_array_elements_text(pg_temp.ex(sql)->'predicates') ORDER BY 1)
$$;

-- Predicates on columns that are not masked are fine.
SELECT is(pg_temp.refusal('SELECT email FROM users WHERE id = :id'), 'none', 'a masked output, filtered on another column');
SELECT is(pg_temp.predicates('SELECT email FROM users WHERE id = :id ORDER BY name'),
          ARRAY['public.users.id', 'public.users.name'], 'explain lists the predicate columns');

-- Each kind of predicate on a masked column.
SELECT is(pg_temp.refusal('SELECT id FROM users WHERE email = :e'), 'mask_predicate', 'WHERE');
SELECT matches(pg_temp.ex('SELECT id FROM users WHERE email = :e')->'refused'->>'reason', 'public\.users\.email',
               'the refusal names the column');
SELECT is(pg_temp.refusal('SELECT id FROM users WHERE lower(email) LIKE :p'), 'mask_predicate', 'WHERE on an expression');
SELECT is(pg_temp.refusal('SELECT o.amount FROM orders o JOIN users u ON u.email = o.note'), 'mask_predicate', 'JOIN ON');
SELECT is(pg_temp.refusal('SELECT o.amount FROM orders o LEFT JOIN users u ON u.id = o.user_id AND u.email > :x'),
          'mask_predicate', 'LEFT JOIN ON');
SELECT is(pg_temp.refusal('SELECT a.id FROM users a JOIN users b USING (email)'), 'mask_predicate', 'JOIN USING');
SELECT is(pg_temp.refusal('SELECT count(*) FROM users GROUP BY email'), 'mask_predicate', 'GROUP BY');
SELECT is(pg_temp.refusal('SELECT count(*) FROM users GROUP BY ROLLUP (name, email)'), 'mask_predicate', 'GROUP BY ROLLUP');
SELECT is(pg_temp.refusal($$SELECT name FROM users GROUP BY name HAVING max(email) > 'm'$$), 'mask_predicate', 'HAVING');
SELECT is(pg_temp.refusal('SELECT name FROM users ORDER BY email LIMIT 1'), 'mask_predicate', 'ORDER BY with LIMIT');
SELECT is(pg_temp.refusal('SELECT email AS e FROM users ORDER BY e DESC LIMIT 1'), 'mask_predicate',
          'ORDER BY a masked output''s alias');
SELECT is(pg_temp.refusal('SELECT DISTINCT ON (email) name FROM users'), 'mask_predicate', 'DISTINCT ON');
SELECT is(pg_temp.refusal('SELECT name FROM users ORDER BY id LIMIT (SELECT length(email) FROM users WHERE id = 1)'),
          'mask_predicate', 'a LIMIT computed from a masked column');
SELECT is(pg_temp.refusal('SELECT rank() OVER (PARTITION BY email ORDER BY id) FROM users'), 'mask_predicate',
          'window PARTITION BY');
SELECT is(pg_temp.refusal('SELECT row_number() OVER (ORDER BY email) FROM users'), 'mask_predicate', 'window ORDER BY');
SELECT is(pg_temp.refusal('SELECT name FROM users WINDOW w AS (ORDER BY email) ORDER BY name'), 'mask_predicate',
          'a named window');

-- At every level.
SELECT is(pg_temp.refusal('SELECT * FROM (SELECT name FROM users WHERE email = :e) s'), 'mask_predicate',
          'inside a subquery in FROM');
SELECT is(pg_temp.refusal('SELECT * FROM (SELECT name FROM users ORDER BY email LIMIT 1) s'), 'mask_predicate',
          'ORDER BY with LIMIT inside a subquery');
SELECT is(pg_temp.refusal('WITH c AS (SELECT name FROM users WHERE email LIKE :p) SELECT * FROM c'), 'mask_predicate',
          'inside a CTE');
SELECT is(pg_temp.refusal('WITH c AS (SELECT email AS e FROM users) SELECT count(*) FROM c GROUP BY e'), 'mask_predicate',
          'grouping on a CTE column that derives from a masked one');
SELECT is(pg_temp.refusal('SELECT s.e FROM (SELECT email AS e FROM users) s WHERE s.e = :x'), 'mask_predicate',
          'filtering on a subquery column that derives from a masked one');
SELECT is(pg_temp.refusal('SELECT id FROM orders o WHERE EXISTS (SELECT 1 FROM users u WHERE u.email = o.note)'),
          'mask_predicate', 'inside an EXISTS sublink');
SELECT is(pg_temp.refusal('SELECT id FROM orders WHERE note IN (SELECT email FROM users)'), 'mask_predicate',
          'an IN sublink comparing with a masked column');
SELECT is(pg_temp.refusal($$SELECT (SELECT count(*) FROM users WHERE email LIKE 'a%')$$), 'mask_predicate',
          'inside a sublink in the select list');
SELECT is(pg_temp.refusal('SELECT x.n FROM orders o, LATERAL (SELECT name AS n FROM users u WHERE u.email = o.note) x'),
          'mask_predicate', 'inside a LATERAL subquery');
SELECT is(pg_temp.refusal('SELECT note FROM orders UNION SELECT name FROM users WHERE email = :e'), 'mask_predicate',
          'inside a set operation''s arm');
SELECT is(pg_temp.refusal('SELECT id FROM user_emails WHERE address = :a'), 'mask_predicate',
          'on a view column that derives from a masked one');
SELECT is(pg_temp.refusal('SELECT name FROM acme_users'), 'mask_predicate', 'inside a view''s definition');
SELECT is(pg_temp.refusal('UPDATE users SET name = :n WHERE email = :e'), 'mask_predicate', 'the WHERE of an UPDATE');
SELECT is(pg_temp.refusal('DELETE FROM orders WHERE user_id IN (SELECT id FROM users WHERE email = :e)'),
          'mask_predicate', 'a sublink in the WHERE of a DELETE');

-- A predicate column whose sources cannot be known.
SELECT is(pg_temp.refusal('SELECT u.name FROM users u, f_users() f WHERE f.id = u.id'), 'mask_predicate',
          'a join on a function in FROM');
SELECT is(pg_temp.ex('SELECT u.name FROM users u, f_users() f WHERE f.id = u.id')->>'predicate_unresolvable',
          'a function in FROM', 'explain says why');
SELECT is(pg_temp.refusal('SELECT u.name FROM users u, generate_series(1, 3) g WHERE g = u.id'), 'none',
          'a join on a pure built-in function in FROM');

-- Row-level security is the database's own.
SELECT is(pg_temp.refusal('SELECT amount FROM orders'), 'none', 'row-level security quals on a masked column do not count');
SELECT is(pg_temp.predicates('SELECT amount FROM orders WHERE amount > 0'), ARRAY['public.orders.amount'],
          'nor do they show among the predicates');

-- A policy without mask rules, and the opt-out.
SELECT is(pg_temp.refusal('SELECT id FROM users WHERE email = :e', 'plain'), 'none', 'a policy without mask rules');
SELECT is(pg_temp.refusal('SELECT u.name FROM users u, f_users() f WHERE f.id = u.id', 'plain'), 'none',
          'a policy without mask rules does not care about unresolvable predicates');
DO $$ BEGIN PERFORM querygate.set_policy('p', mask_predicates => 'allow'); END $$;
SELECT is(pg_temp.refusal('SELECT id FROM users WHERE email = :e'), 'none', 'mask_predicates => allow: WHERE');
SELECT is(pg_temp.refusal('SELECT name FROM users ORDER BY email LIMIT 1'), 'none', 'mask_predicates => allow: ORDER BY');
SELECT is(pg_temp.refusal('SELECT u.name FROM users u, f_users() f WHERE f.id = u.id'), 'none',
          'mask_predicates => allow: unresolvable predicates');

SELECT * FROM finish();
ROLLBACK;
