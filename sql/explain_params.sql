-- What each parameter of a saved query meets, as querygate.explain shows it ("params"), and so how
-- the run history masks its value for a policy that keeps parameters (history_params): as
-- strictly as the columns it meets. A parameter meets the columns of each predicate it is in, each
-- conjunct of an AND apart (WHERE, JOIN ON, HAVING, sort and group keys, function arguments in
-- FROM), at any level (subqueries, CTEs); the column a value it is in is assigned to (INSERT with
-- one or more VALUES rows, INSERT ... SELECT, UPDATE SET) and that value's sources; and the
-- sources of an output it is in. One whose columns cannot be known is dropped under a policy that
-- masks anything.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
SELECT plan(20);

\i sql/include/explain_fixture.sql
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO qa_reader;

DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'qa_reader');
    PERFORM querygate.mask('p', 'orders.note', 'mask');
    PERFORM querygate.mask('p', 'orders.id', 'hash');
    PERFORM querygate.mask('p', 'users.email', 'hash');
    PERFORM querygate.mask('p', 'users.salary', 'null');
    PERFORM querygate.grant_writes('p', ARRAY['insert', 'update']);
    -- parameters compared with masked columns are the point here
    PERFORM querygate.set_policy('p', mask_predicates => 'allow', history_params => true);
    PERFORM querygate.create_policy('plain', 'qa_reader');
END $$;

-- name=action for each parameter, in order ("none" for no mask).
CREATE FUNCTION pg_temp.history(sql text, policy text DEFAULT 'p') RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT (p->>'name') || '=' || coalesce(p->>'history', 'none')
                   FROM jsonb_array_elements(pg_temp.ex(sql, policy)->'params') WITH ORDINALITY AS x(p, i)
                  ORDER BY i)
$$;
-- The columns parameter n meets, sorted.
CREATE FUNCTION pg_temp.meets(sql text, n int) RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT jsonb_array_elements_text(pg_temp.ex(sql)->'params'->(n - 1)->'meets') ORDER BY 1)
$$;

-- Predicates: each conjunct apart; an OR is one predicate.
SELECT is(pg_temp.history('SELECT name FROM users WHERE id = :id AND email = :email'),
          ARRAY['id=none', 'email=hash'], 'each conjunct of an AND is its own predicate');
SELECT is(pg_temp.meets('SELECT name FROM users WHERE id = :id AND email = :email', 1),
          ARRAY['public.users.id'], 'a parameter meets only the columns of its conjunct');
SELECT is(pg_temp.history('SELECT name FROM users WHERE id = :id OR email = :email'),
          ARRAY['id=hash', 'email=hash'], 'both sides of an OR are one predicate');
SELECT is(pg_temp.history('SELECT name FROM users WHERE lower(email) = lower(:e)'),
          ARRAY['e=hash'], 'computed on both sides');
SELECT is(pg_temp.history('SELECT u.name FROM users u JOIN orders o ON o.user_id = u.id AND o.note = :n'),
          ARRAY['n=mask'], 'a JOIN condition');
SELECT is(pg_temp.history('SELECT user_id, sum(amount) FROM orders GROUP BY user_id HAVING sum(amount) > :a'),
          ARRAY['a=none'], 'HAVING');
SELECT is(pg_temp.history('SELECT name FROM users ORDER BY salary > :s'), ARRAY['s=null'], 'a sort key');
SELECT is(pg_temp.history('SELECT name FROM users LIMIT :n'), ARRAY['n=none'], 'LIMIT meets nothing');

-- Other levels.
SELECT is(pg_temp.history('SELECT name FROM users WHERE id IN (SELECT user_id FROM orders WHERE note = :n)'),
          ARRAY['n=mask'], 'a predicate in a sublink');
SELECT is(pg_temp.history('WITH x AS (SELECT CAST(:v AS text) AS v) SELECT u.name FROM users u, x WHERE u.email = x.v'),
          ARRAY['v=hash'], 'through a CTE''s output to the predicate that compares it');

-- Writes: the column assigned, however the value gets there.
SELECT is(pg_temp.history('INSERT INTO orders (id, user_id, amount, note) VALUES (:id, :u, :a, :n)'),
          ARRAY['id=hash', 'u=none', 'a=none', 'n=mask'], 'INSERT ... VALUES: each its column');
SELECT is(pg_temp.history('INSERT INTO orders (id, note) VALUES (:a, ''x''), (1, :b)'),
          ARRAY['a=hash', 'b=mask'], 'INSERT with several VALUES rows');
SELECT is(pg_temp.history('INSERT INTO orders (id, note) SELECT :a, :b'),
          ARRAY['a=hash', 'b=mask'], 'INSERT ... SELECT');
SELECT is(pg_temp.history('UPDATE orders SET note = :n, amount = :a WHERE user_id = :u'),
          ARRAY['n=mask', 'a=none', 'u=none'], 'UPDATE SET and its WHERE');
SELECT is(pg_temp.meets('UPDATE orders SET note = :n, amount = :a WHERE user_id = :u', 1),
          ARRAY['public.orders.note'], 'an assigned value meets its column');

-- Outputs.
SELECT is(pg_temp.history('SELECT coalesce(:a, email) AS e FROM users WHERE id = :id'),
          ARRAY['a=hash', 'id=none'], 'an output meets its sources');
SELECT is(pg_temp.history('SELECT CAST(:a AS text) AS a'), ARRAY['a=none'], 'an output of nothing');

-- Cannot be known: dropped under a masking policy; a policy without masks masks nothing.
SELECT is(pg_temp.history('SELECT name FROM users WHERE id = (f_user(:id)).id'), ARRAY['id=drop'],
          'a parameter given to a function that reads the database');
SELECT is(pg_temp.history('SELECT name FROM users WHERE id = :id AND email = :email', 'plain'),
          ARRAY['id=none', 'email=none'], 'a policy without masks');
SELECT is((SELECT history_params FROM querygate.policies WHERE name = 'p'), true,
          'the policies view shows history_params');

SELECT * FROM finish();
ROLLBACK;
