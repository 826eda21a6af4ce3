-- A mask checks the queries already granted to its policy (querygate.mask): one that would make a
-- granted query refused at every call (a filter on the masked column: mask_predicate; the column
-- computed with: mask_expression) is refused with 42501 naming the query, and nothing of it is
-- kept; force => true masks anyway (and the query's calls are then refused); a mask that breaks
-- nothing granted is taken as before; grant_query refuses the same situation the other way round.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE mg_reader NOLOGIN;
CREATE TABLE mg_people (id int PRIMARY KEY, email text, ssn text);
GRANT SELECT ON mg_people TO mg_reader;
DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'mg_reader');
    PERFORM querygate.save_query('by_ssn', 'SELECT id FROM mg_people WHERE ssn = :ssn');
    PERFORM querygate.save_query('shout', 'SELECT id, upper(email) AS email FROM mg_people');
    PERFORM querygate.save_query('people', 'SELECT id, email, ssn FROM mg_people');
    PERFORM querygate.grant_query('p', 'by_ssn');
    PERFORM querygate.grant_query('p', 'shout');
    PERFORM querygate.grant_query('p', 'people');
END $$;

CREATE FUNCTION pg_temp.rules() RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(pattern || '=' || action, ',' ORDER BY pattern), '(none)')
      FROM querygate.mask_rule WHERE policy = 'p'
$$;

SELECT plan(11);

SELECT throws_ok($$SELECT querygate.mask('p', 'mg_people.ssn', 'hash')$$, '42501', NULL,
                 'a mask on a column a granted query filters on: 42501');
SELECT throws_like($$SELECT querygate.mask('p', 'mg_people.ssn', 'hash')$$,
                   'policy "p" would refuse saved query "by_ssn": %',
                   'naming the query it would break');
SELECT is(pg_temp.rules(), '(none)', 'and the rule is not kept');
SELECT throws_ok($$SELECT querygate.mask('p', 'mg_people.email', 'mask')$$, '42501', NULL,
                 'a mask on a column a granted query computes with: 42501');
SELECT lives_ok($$SELECT querygate.mask('p', 'mg_people.ssn', 'hash', force => true)$$,
                'force => true masks anyway');
SELECT is(pg_temp.rules(), 'mg_people.ssn=hash', 'the rule is kept');
SELECT is(querygate.explain('p', 'by_ssn')->'refused'->>'code', 'mask_predicate',
          'and the query is refused at every call, as explain says');
SELECT lives_ok($$SELECT querygate.revoke_query('p', 'shout')$$, 'once the query that computes with email is revoked');
SELECT lives_ok($$SELECT querygate.mask('p', 'mg_people.email', 'mask')$$, 'a mask on email is taken');
SELECT throws_ok($$SELECT querygate.grant_query('p', 'shout')$$, '42501', NULL,
                 'and grant_query refuses the query it would break');
CREATE TABLE mg_gone (id int);
GRANT SELECT ON mg_gone TO mg_reader;
DO $$
BEGIN
    PERFORM querygate.save_query('gone', 'SELECT id FROM mg_gone');
    PERFORM querygate.grant_query('p', 'gone');
END $$;
DROP TABLE mg_gone;
SELECT lives_ok($$SELECT querygate.mask('p', 'mg_people.unused', 'null')$$,
                'a granted query that cannot be analyzed now (its table dropped) is no mask''s to check');

SELECT * FROM finish();
ROLLBACK;
