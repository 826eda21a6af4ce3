-- A masked value may reach an answer only unchanged. Under a policy with mask rules, every way of
-- computing with a masked column is refused (mask_expression; mask_predicate for what compares
-- rows: DISTINCT and set operations but UNION ALL): errors as an oracle, row counts, time, and the
-- mask actions applied to a derived value; through views, CTEs, subqueries, LATERAL, aggregates,
-- window functions and set operations. A column passed through unchanged is served and masked.
-- The opt-out (mask_predicates => 'allow') serves them all; grant_query refuses what every call
-- would refuse.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE me_reader NOLOGIN;
CREATE TABLE me_people (id int PRIMARY KEY, name text, ssn text UNIQUE, card text, balance int, doc jsonb);
CREATE TABLE me_orders (id serial PRIMARY KEY, ssn_ref text REFERENCES me_people (ssn));
CREATE TABLE me_notes (id int PRIMARY KEY, body text, n int);
CREATE TABLE me_vault (s text);
CREATE TABLE me_other (id int PRIMARY KEY, ssn text);
CREATE TABLE me_small (v int2);
CREATE TABLE me_short (s varchar(3));
CREATE TABLE me_copy (s text);
CREATE TYPE me_addr AS (street text, zip text);
CREATE TABLE me_homes (id int PRIMARY KEY, addr me_addr);
CREATE VIEW me_computed AS SELECT id, lower(ssn) AS l, name FROM me_people;
CREATE VIEW me_plain AS SELECT id, ssn AS s, name FROM me_people;
GRANT SELECT ON me_people, me_other, me_computed, me_plain, me_homes TO me_reader;
GRANT INSERT ON me_small, me_short, me_copy, me_orders, me_vault, me_people TO me_reader;
GRANT UPDATE, SELECT ON me_notes TO me_reader;
GRANT UPDATE ON me_people TO me_reader;
GRANT USAGE ON SEQUENCE me_orders_id_seq TO me_reader;
DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'me_reader');
    PERFORM querygate.mask('p', 'me_people.ssn', 'hash');
    PERFORM querygate.mask('p', 'me_people.card', 'mask');
    PERFORM querygate.mask('p', 'me_people.balance', 'hash');
    PERFORM querygate.mask('p', 'me_other.ssn', 'hash');
    PERFORM querygate.mask('p', 'me_vault.s', 'hash');
    PERFORM querygate.mask('p', 'me_homes.addr', 'mask');
    PERFORM querygate.grant_writes('p', '{insert,update}');
END $$;

\i sql/include/explain_helpers.sql

SELECT plan(80);

-- 1. Errors as an oracle: an expression that fails for some values and not others (an assignment
-- cast into a narrower column is one too).
SELECT is(pg_temp.refusal(q), 'mask_expression', 'error oracle: ' || q)
  FROM unnest(ARRAY[
    'SELECT id, 1000 / (balance - :x) AS r FROM me_people',
    'SELECT id, balance * :big AS r FROM me_people',
    'SELECT id, ssn::int AS r FROM me_people',
    'SELECT id, sqrt(balance - :x) AS r FROM me_people',
    'SELECT id, to_date(ssn, ''YYYY-MM-DD'') AS r FROM me_people',
    'SELECT id, (doc ->> ''k'')::int + balance AS r FROM me_people',
    'INSERT INTO me_small (v) SELECT balance FROM me_people',
    'INSERT INTO me_short (s) SELECT ssn FROM me_people']) AS q;

-- 2. Row counts: set-returning functions fed by a masked value, and what compares rows.
SELECT is(pg_temp.refusal(q), 'mask_expression', 'row count: ' || q)
  FROM unnest(ARRAY[
    'SELECT id, regexp_matches(ssn, :re) AS m FROM me_people',
    'SELECT id, unnest(string_to_array(ssn, ''-'')) AS part FROM me_people',
    'SELECT id, jsonb_path_query(to_jsonb(ssn), :path::jsonpath) AS j FROM me_people',
    'SELECT id, generate_series(1, balance) AS g FROM me_people']) AS q;
SELECT is(pg_temp.refusal(q), 'mask_predicate', 'rows compared: ' || q)
  FROM unnest(ARRAY[
    'SELECT DISTINCT ssn FROM me_people',
    'SELECT ssn FROM me_people INTERSECT SELECT :guess::text',
    'SELECT id FROM (SELECT id, ssn FROM me_people EXCEPT SELECT id, :g::text FROM me_people) s',
    'SELECT ssn FROM me_people UNION SELECT ssn FROM me_other',
    'SELECT count(*) FROM (SELECT DISTINCT name, ssn FROM me_people) d']) AS q;

-- 3. Time: work that depends on the value.
SELECT is(pg_temp.refusal(q), 'mask_expression', 'time: ' || q)
  FROM unnest(ARRAY[
    'SELECT id, CASE WHEN balance > :x THEN pg_sleep(1) END AS z FROM me_people',
    'SELECT id, pg_sleep(balance / 1000.0) AS z FROM me_people',
    'SELECT id, repeat(ssn, 100000) AS z FROM me_people']) AS q;

-- 4. The mask actions applied to a derived value.
SELECT is(pg_temp.refusal(q), 'mask_expression', 'mask action on a derived value: ' || q)
  FROM unnest(ARRAY[
    'SELECT id, balance > :x AS b FROM me_people',
    'SELECT id, substr(ssn, 1, 0) || :guess AS h FROM me_people',
    'SELECT id, right(card, :n) AS r FROM me_people',
    'SELECT id, ''@'' || ssn AS e FROM me_people',
    'SELECT id, lower(ssn) AS l FROM me_people',
    'SELECT id, coalesce(ssn, name) AS c FROM me_people',
    -- A field of a masked composite: the mask is the whole value's, and the same action on one
    -- field would show more (its first character, which rows share it).
    'SELECT id, (addr).zip AS zip FROM me_homes',
    'SELECT id, (h.addr).street FROM me_homes h']) AS q;
SELECT matches(querygate.explain('p', 'q')->'refused'->>'reason', 'a field of a composite value',
               'the refusal says a field of a composite value is what computes');

-- 5. Through every construct.
SELECT is(pg_temp.refusal(q), 'mask_expression', 'nested: ' || q)
  FROM unnest(ARRAY[
    'SELECT l FROM me_computed',
    'WITH c AS (SELECT id, lower(ssn) AS l FROM me_people) SELECT l FROM c',
    'SELECT s.l FROM (SELECT upper(ssn) AS l FROM me_people) s',
    'SELECT x.l FROM me_people p, LATERAL (SELECT lower(p.ssn) AS l) x',
    'SELECT max(balance) AS m FROM me_people',
    'SELECT array_agg(ssn) AS a FROM me_people',
    'SELECT count(DISTINCT ssn) AS n FROM me_people',
    'SELECT id, lag(ssn) OVER (ORDER BY id) AS prev FROM me_people',
    'SELECT ssn FROM me_people UNION ALL SELECT lower(ssn) FROM me_other',
    'SELECT id, (SELECT lower(o.ssn) FROM me_other o WHERE o.id = p.id) AS l FROM me_people p',
    'SELECT id, ROW(id, ssn)::text AS r FROM me_people',
    'SELECT id, to_jsonb(p) AS j FROM me_people p',
    'WITH RECURSIVE r(n, s) AS (SELECT 1, ssn FROM me_people WHERE id = 1 UNION ALL SELECT n + 1, s || ''+'' FROM r WHERE n < 3) SELECT s FROM r']) AS q;

-- 6. Passed through unchanged: served, and masked.
SELECT is(pg_temp.refusal(q), 'none', 'served: ' || q)
  FROM unnest(ARRAY[
    'SELECT id, ssn, card, balance FROM me_people',
    'SELECT * FROM me_people',
    'SELECT id, name FROM me_computed',
    'SELECT id, s FROM me_plain',
    'WITH c AS (SELECT id, ssn FROM me_people) SELECT id, ssn FROM c',
    'SELECT s.x FROM (SELECT ssn AS x FROM me_people) s',
    'SELECT x.s FROM me_people p, LATERAL (SELECT p.ssn AS s) x',
    'SELECT ssn FROM me_people UNION ALL SELECT ssn FROM me_other',
    'SELECT count(card) AS n FROM me_people',
    'SELECT count(card)::int AS n FROM me_people',
    'SELECT id, (SELECT o.ssn FROM me_other o WHERE o.id = p.id) AS s FROM me_people p',
    'SELECT id, ssn::text AS s FROM me_people',
    'SELECT p.id, o.ssn FROM me_people p JOIN me_other o USING (id)',
    'SELECT id, p.ssn FROM me_people p FULL JOIN me_other o USING (id)',
    'INSERT INTO me_vault (s) SELECT ssn FROM me_people',
    'SELECT s.id FROM (SELECT id, lower(ssn) AS l FROM me_people) s',
    'SELECT id, addr FROM me_homes']) AS q;
SELECT is(pg_temp.refusal('SELECT id, ssn FROM me_people'), 'none', 'a plain column');
SELECT is(querygate.explain('p', 'q')->'columns'->1->>'mask', 'hash', 'served, and ssn is hashed');

-- 5b. Computations no output shows that run anyway, writes at any level, multiple-column
-- assignments, copies into a column masked less, and what constraints compare.
SELECT is(pg_temp.refusal(q), 'mask_expression', 'unseen or written: ' || q)
  FROM unnest(ARRAY[
    'SELECT count(*) AS n FROM (SELECT regexp_matches(ssn, :re) FROM me_people WHERE id = :id) s',
    'SELECT s.id FROM (SELECT id, CASE WHEN ssn LIKE :pat THEN pg_sleep(1) END AS z FROM me_people) s',
    'WITH c AS MATERIALIZED (SELECT id, 1 / (length(ssn) - :n) AS x FROM me_people) SELECT id FROM c',
    'SELECT EXISTS (SELECT 1 FROM (SELECT regexp_matches(ssn, :re) FROM me_people) s) AS e',
    'WITH w AS (UPDATE me_people SET balance = balance * :f WHERE id = :id RETURNING id) SELECT id FROM w',
    'UPDATE me_notes SET (body, n) = (SELECT lower(ssn), 1 FROM me_people WHERE id = :pid) WHERE id = :nid',
    'UPDATE me_notes SET (body, n) = (SELECT ssn, 1 FROM me_people WHERE id = :pid) WHERE id = :nid RETURNING body',
    'INSERT INTO me_copy (s) SELECT ssn FROM me_people',
    'WITH w AS (INSERT INTO me_copy (s) SELECT ssn FROM me_people RETURNING 1) SELECT count(*) AS n FROM w']) AS q;
SELECT is(pg_temp.refusal(q), 'mask_predicate', 'a constraint compares it: ' || q)
  FROM unnest(ARRAY[
    'INSERT INTO me_people (id, ssn) VALUES (:id, :guess) ON CONFLICT (ssn) DO NOTHING RETURNING id',
    'UPDATE me_people SET ssn = :guess WHERE id = :id',
    'INSERT INTO me_orders (ssn_ref) VALUES (:guess) RETURNING id']) AS q;

-- explain says what computed with what.
SELECT is(pg_temp.refusal('SELECT id, lower(ssn) AS l FROM me_people'), 'mask_expression', 'lower(ssn)');
SELECT is(querygate.explain('p', 'q')->'computed',
          '[{"column": "l", "source": "public.me_people.ssn", "by": "lower()"}]'::jsonb,
          'explain lists the output, its source and what computed with it');
SELECT is(querygate.explain('p', 'q')->'refused'->>'reason',
          'the query computes with the masked column public.me_people.ssn (lower()); a masked value may only be returned unchanged',
          'and the refusal names the column and the use');

-- 7. The opt-out serves them, masked as a whole; grant_query refuses what every call would.
DO $$ BEGIN PERFORM querygate.save_query('derived', 'SELECT id, lower(ssn) AS l FROM me_people'); END $$;
SELECT throws_ok($$SELECT querygate.grant_query('p', 'derived')$$, '42501',
                 'policy "p" would refuse saved query "derived": the query computes with the masked column public.me_people.ssn (lower()); a masked value may only be returned unchanged',
                 'grant_query refuses a query every call would refuse');
DO $$ BEGIN PERFORM querygate.set_policy('p', mask_predicates => 'allow'); END $$;
SELECT is(querygate.explain('p', 'derived')->'refused', 'null'::jsonb, 'opted out: served');
SELECT is(querygate.explain('p', 'derived')->'columns'->1->>'mask', 'hash', 'opted out: the derived column is hashed as a whole');
SELECT lives_ok($$SELECT querygate.grant_query('p', 'derived')$$, 'opted out: granted');

SELECT * FROM finish();
ROLLBACK;
