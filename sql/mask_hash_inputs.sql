-- A hashed output carries nothing but the values of the columns it hashes. A hash is the same for
-- equal values, so any other value a call can put into a hashed output (a parameter, a constant, a
-- computed or aggregated value, a column the policy does not hash) hashes next to the hidden ones
-- and confirms a guess: refused with mask_hash_input at grant, at explain and at every call. Under
-- mask or a stricter action a merged value is masked too and confirms nothing; the policy's
-- opt-out (mask_predicates => 'allow') lifts this refusal as it does the other inference checks.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE hi_reader NOLOGIN;
CREATE TABLE hi_people (id int PRIMARY KEY, name text, ssn text, card text, secret text);
CREATE TABLE hi_other (id int PRIMARY KEY, ssn text);
CREATE TABLE hi_plain (id int PRIMARY KEY, ssn text);
CREATE TABLE hi_defaults (id int PRIMARY KEY, ssn text DEFAULT 'unknown');
CREATE VIEW hi_tagged AS SELECT id, ssn, 'tag' AS tag, upper(name) AS shout FROM hi_people;
CREATE MATERIALIZED VIEW hi_guesses AS SELECT ssn FROM hi_people UNION ALL SELECT '123-45-6789';
GRANT SELECT, INSERT, UPDATE ON hi_people, hi_other, hi_plain, hi_defaults TO hi_reader;
GRANT SELECT ON hi_guesses, hi_tagged TO hi_reader;
DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'hi_reader');
    PERFORM querygate.mask('p', 'hi_people.ssn', 'hash');
    PERFORM querygate.mask('p', 'hi_other.ssn', 'hash');
    PERFORM querygate.mask('p', 'hi_defaults.ssn', 'hash');
    PERFORM querygate.mask('p', 'hi_people.card', 'partial(0,4)');
    PERFORM querygate.mask('p', 'hi_people.secret', 'mask');
    PERFORM querygate.grant_writes('p', '{insert,update}');
END $$;

\i sql/include/explain_helpers.sql

SELECT plan(37);

-- 1. A value the caller chooses, merged into a hashed output: by a set operation, VALUES, a CTE,
-- a subquery, a write's RETURNING of what it wrote (one row or several).
SELECT is(pg_temp.refusal(q), 'mask_hash_input', 'a parameter: ' || q)
  FROM unnest(ARRAY[
    'SELECT ssn FROM hi_people WHERE id = :id UNION ALL SELECT unnest(:g::text[])',
    'SELECT ssn FROM hi_people UNION ALL SELECT :g::text',
    'SELECT ssn FROM hi_people UNION ALL VALUES (:g::text)',
    'WITH g AS (SELECT :g::text AS s) SELECT ssn FROM hi_people UNION ALL SELECT s FROM g',
    'SELECT s FROM (SELECT ssn AS s FROM hi_people UNION ALL SELECT :g::text) u',
    'INSERT INTO hi_people (id, ssn) VALUES (:id, :ssn) RETURNING ssn',
    'INSERT INTO hi_people (id, ssn) VALUES (:a, :sa), (:b, :sb) RETURNING ssn',
    'UPDATE hi_people SET ssn = :ssn WHERE id = :id RETURNING ssn']) AS q;

-- 2. A value the server makes: a constant, a default, a computed value, an aggregate (a count a
-- filter steers is a number the caller picks), a series of candidates.
SELECT is(pg_temp.refusal(q), 'mask_hash_input', 'a value no column holds: ' || q)
  FROM unnest(ARRAY[
    'SELECT ssn FROM hi_people UNION ALL SELECT ''123-45-6789''',
    'SELECT ssn FROM hi_guesses',
    'INSERT INTO hi_defaults (id) VALUES (:id) RETURNING ssn',
    'SELECT ssn FROM hi_people UNION ALL SELECT lpad(g::text, 9, ''0'') FROM generate_series(0, 999) g',
    'SELECT ssn FROM hi_people UNION ALL SELECT current_user::text',
    'SELECT count(ssn) AS n FROM hi_people WHERE id <= :n',
    'SELECT ssn FROM hi_people UNION ALL SELECT (SELECT max(name) FROM hi_people)']) AS q;

-- A whole row is hashed as one value, judged field by field: a field of hashed values that a
-- parameter can reach is refused; a constant or computed field beside them cannot make the row
-- equal to a row the caller picks, and is served (below).
SELECT is(pg_temp.refusal('SELECT u FROM (SELECT ssn FROM hi_people UNION ALL SELECT :g::text) u'),
          'mask_hash_input', 'a whole row with a field a parameter reaches');

-- 3. Another column's values: one the policy does not hash, or masks otherwise.
SELECT is(pg_temp.refusal(q), 'mask_hash_input', 'another column: ' || q)
  FROM unnest(ARRAY[
    'SELECT ssn FROM hi_people UNION ALL SELECT name FROM hi_people',
    'SELECT ssn FROM hi_people UNION ALL SELECT ssn FROM hi_plain',
    'SELECT ssn FROM hi_people UNION ALL SELECT card FROM hi_people',
    'INSERT INTO hi_other (id, ssn) SELECT id, ssn FROM hi_plain RETURNING ssn']) AS q;

-- The refusal names the output and what can reach it.
SELECT is(pg_temp.ex('SELECT ssn FROM hi_people UNION ALL SELECT :g::text')->'refused'->>'reason',
          'column "ssn" is hashed and can carry a value no column holds (a parameter): the hash of a value the caller chooses or knows confirms a guess',
          'the reason names the output and the parameter');
SELECT is(pg_temp.ex('SELECT ssn AS s FROM hi_people UNION ALL SELECT name FROM hi_people')->'refused'->>'reason',
          'column "s" is hashed and can carry values of public.hi_people.name, which the policy does not hash: the hash of a value the caller chooses or knows confirms a guess',
          'and the column it merges');

-- 4. Served: the hashed columns themselves, wherever they come from; a null (which stays null);
-- a write that returns what it did not write from a caller's value; a merged value under mask
-- (masked in turn: its first character is the caller's own).
SELECT is(pg_temp.refusal(q), 'none', 'served: ' || q)
  FROM unnest(ARRAY[
    'SELECT ssn FROM hi_people WHERE id = :id',
    'SELECT ssn FROM hi_people UNION ALL SELECT ssn FROM hi_other',
    'SELECT ssn FROM hi_people UNION ALL SELECT NULL',
    'UPDATE hi_people SET name = :n WHERE id = :id RETURNING ssn',
    'INSERT INTO hi_people (id, ssn) SELECT id, ssn FROM hi_other RETURNING ssn',
    'INSERT INTO hi_people (id, name) VALUES (:id, :n) RETURNING ssn',
    'SELECT secret FROM hi_people UNION ALL SELECT :g::text',
    'WITH RECURSIVE r(n, x) AS (SELECT 1, NULL::text UNION ALL SELECT n + 1, r::text FROM r WHERE n < 3) SELECT x FROM r',
    'SELECT t FROM hi_tagged t']) AS q;
SELECT is(querygate.explain('p', 'q')->'columns'->0->>'mask', 'hash', 'a whole row with a hashed field is hashed');
DO $$ BEGIN PERFORM querygate.save_query('q', 'SELECT secret FROM hi_people UNION ALL SELECT :g::text'); END $$;
SELECT is(querygate.explain('p', 'q')->'columns'->0->>'mask', 'mask', 'a merged value under mask is masked');

-- 5. grant_query refuses what every call would, with a hint of its own.
DO $$ BEGIN PERFORM querygate.save_query('guess', 'SELECT ssn FROM hi_people UNION ALL SELECT :g::text'); END $$;
SELECT throws_ok($$SELECT querygate.grant_query('p', 'guess')$$, '42501',
                 'policy "p" would refuse saved query "guess": column "ssn" is hashed and can carry a value no column holds (a parameter): the hash of a value the caller chooses or knows confirms a guess',
                 'grant_query refuses a hashed output a parameter reaches');
CREATE FUNCTION pg_temp.grant_hint() RETURNS text LANGUAGE plpgsql AS $$
DECLARE hint text;
BEGIN
    PERFORM querygate.grant_query('p', 'guess');
    RETURN NULL;
EXCEPTION WHEN insufficient_privilege THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RETURN hint;
END $$;
SELECT alike(pg_temp.grant_hint(), 'Return a hashed column by itself%', 'its hint says what to change');

-- 6. The opt-out serves it, hashed.
DO $$ BEGIN PERFORM querygate.set_policy('p', mask_predicates => 'allow'); END $$;
SELECT is(querygate.explain('p', 'guess')->'refused', 'null'::jsonb, 'opted out: served');
SELECT lives_ok($$SELECT querygate.grant_query('p', 'guess')$$, 'opted out: granted');

SELECT * FROM finish();
ROLLBACK;
