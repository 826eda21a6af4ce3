-- save_query finds :name placeholders with PostgreSQL's own scanner (not in strings, comments,
-- dollar quotes, quoted identifiers, :: casts or array slices), validates the SQL with the parser
-- and the analyzer at save time (without running it), accepts one statement of the allowed kinds,
-- and refuses reserved parameter names and parameters whose type cannot be inferred.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE TABLE t (x int PRIMARY KEY, label text);

-- 'SQLSTATE: message' of the error a statement raises, or 'no error'.
CREATE FUNCTION pg_temp.error_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- ok() when the statement fails with one of the given SQLSTATEs; diag shows what happened.
CREATE FUNCTION pg_temp.throws_one_of(stmt text, codes text[], descr text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    got text := pg_temp.error_of(stmt);
BEGIN
    IF split_part(got, ':', 1) = ANY (codes) THEN
        RETURN ok(true, descr);
    END IF;
    RETURN ok(false, descr) || E'\n' || diag('      caught: ' || got || E'\n      wanted: one of ' || array_to_string(codes, ', '));
END $$;

SELECT plan(66);

-- Placeholders are found and their types inferred.
SELECT lives_ok($$SELECT querygate.save_query('cast', 'SELECT :a::int AS a')$$, ':a::int (placeholder then cast)');
SELECT lives_ok($$SELECT querygate.save_query('ctx', 'SELECT label FROM t WHERE x = :x')$$, 'type inferred from a comparison with a column');
SELECT lives_ok($$SELECT querygate.save_query('twice', 'SELECT :a::int + :a AS s')$$, 'the same placeholder used twice');
SELECT lives_ok($$SELECT querygate.save_query('under', 'SELECT :_a1::text AS a, :B_2::int AS b')$$, 'names with "_", digits and capitals');
SELECT lives_ok($$SELECT querygate.save_query('keywords', 'SELECT :real::int AS r, :limit::int AS l, :user::text AS u')$$, 'names that are SQL keywords (:real, :limit, :user)');
SELECT lives_ok($$SELECT querygate.save_query('noparen', 'SELECT x FROM t WHERE x=:x AND label<>:l')$$, 'placeholders right after operators');

-- Not placeholders: strings, comments, dollar quotes, quoted identifiers, :: casts, array slices.
-- A scanner that took any of these for a placeholder would leave a parameter with no type.
SELECT lives_ok($$SELECT querygate.save_query('in_string', $q$SELECT ':notparam' AS s$q$)$$, 'inside a string literal');
SELECT lives_ok($$SELECT querygate.save_query('in_estring', $q$SELECT E'it\'s :notparam' AS s$q$)$$, 'inside an E'''' string with an escaped quote');
SELECT lives_ok($$SELECT querygate.save_query('in_line_comment', E'SELECT 1 AS one -- :notparam\n')$$, 'inside a -- comment');
SELECT lives_ok($$SELECT querygate.save_query('in_block_comment', 'SELECT /* :notparam /* nested :x */ */ 1 AS one')$$, 'inside a nested /* */ comment');
SELECT lives_ok($t$SELECT querygate.save_query('in_dollar', 'SELECT $z$ :notparam $z$ AS s, $$:also_not$$ AS t')$t$, 'inside dollar quotes');
SELECT lives_ok($$SELECT querygate.save_query('in_ident', 'SELECT 1 AS ":notparam"')$$, 'inside a quoted identifier');
SELECT lives_ok($$SELECT querygate.save_query('casts', 'SELECT ''1''::int AS a, now()::date::text AS b')$$, ':: casts');
SELECT lives_ok($$SELECT querygate.save_query('slice', 'SELECT (ARRAY[1,2,3])[lo:hi] AS s FROM (VALUES (1, 2)) v(lo, hi)')$$, 'array slice [lo:hi]');
SELECT lives_ok($$SELECT querygate.save_query('slice_open', 'SELECT (ARRAY[1,2,3])[:hi] AS s FROM (VALUES (2)) v(hi)')$$, 'array slice [:hi]');
SELECT lives_ok($$SELECT querygate.save_query('mixed', $q$SELECT ':s' AS s /* :c */, $d$:d$d$ AS d, :r::int AS r, '1'::int AS c$q$)$$,
                'a real placeholder among strings, comments, dollar quotes and casts');

-- Kinds of statement: SELECT, VALUES, WITH, INSERT, UPDATE, DELETE, MERGE are accepted, and saving
-- does not run them.
SELECT lives_ok($$SELECT querygate.save_query('values', 'VALUES (:v::int)')$$, 'VALUES');
SELECT lives_ok($$SELECT querygate.save_query('with', 'WITH w AS (SELECT :v::int AS v) SELECT v FROM w')$$, 'WITH ... SELECT');
SELECT lives_ok($$SELECT querygate.save_query('ins', 'INSERT INTO t VALUES (:x, :l) RETURNING x')$$, 'INSERT (types from the target columns)');
SELECT lives_ok($$SELECT querygate.save_query('upd', 'UPDATE t SET label = :l WHERE x = :x')$$, 'UPDATE');
SELECT lives_ok($$SELECT querygate.save_query('del', 'DELETE FROM t WHERE x = :x')$$, 'DELETE');
SELECT lives_ok($$SELECT querygate.save_query('merge', 'MERGE INTO t USING (SELECT :x::int AS x) s ON t.x = s.x WHEN NOT MATCHED THEN INSERT VALUES (s.x, ''m'')')$$, 'MERGE');
SELECT lives_ok($$SELECT querygate.save_query('trailing_semicolon', 'SELECT 1 AS one;')$$, 'one statement with a trailing semicolon');
SELECT is((SELECT count(*)::int FROM t), 0, 'saving INSERT/MERGE did not run them');

-- One statement only; no utility statements; no SELECT INTO.
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('two', 'SELECT 1; SELECT 2')$$, '{42601,0A000,42P18}', 'two statements are refused');
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('two_dml', 'SELECT 1; DELETE FROM t')$$, '{42601,0A000,42P18}', 'a statement smuggled after the first is refused');
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('empty', '')$$, '{42601,0A000,42P18,22023}', 'an empty statement is refused');
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('ddl', 'CREATE TABLE u (y int)')$$, '{42601,0A000,42P18}', 'CREATE TABLE is refused');
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('vacuum', 'VACUUM t')$$, '{42601,0A000,42P18}', 'VACUUM is refused');
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('set', 'SET work_mem = ''1MB''')$$, '{42601,0A000,42P18}', 'SET is refused');
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('copy', 'COPY t TO STDOUT')$$, '{42601,0A000,42P18}', 'COPY is refused');
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('explain', 'EXPLAIN SELECT 1')$$, '{42601,0A000,42P18}', 'EXPLAIN is refused');
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('into', 'SELECT 1 AS one INTO newtab')$$, '{42601,0A000,42P18}', 'SELECT INTO is refused');
SELECT hasnt_table('newtab', 'SELECT INTO created nothing');

-- Parameters: a type must be inferable; page, page_size, format and timeout are reserved.
SELECT pg_temp.throws_one_of($$SELECT querygate.save_query('untyped', 'SELECT 1 AS one WHERE :a IS NULL')$$, '{42P18,42601,0A000}', 'a parameter whose type cannot be inferred is refused');
SELECT ok(pg_temp.error_of($$SELECT querygate.save_query('r1', 'SELECT :page::int AS p')$$) ~ 'page', 'parameter "page" is refused, naming it');
SELECT ok(pg_temp.error_of($$SELECT querygate.save_query('r2', 'SELECT :page_size::int AS p')$$) ~ 'page_size', 'parameter "page_size" is refused, naming it');
SELECT ok(pg_temp.error_of($$SELECT querygate.save_query('r3', 'SELECT :format::text AS f')$$) ~ 'format', 'parameter "format" is refused, naming it');
SELECT ok(pg_temp.error_of($$SELECT querygate.save_query('r4', 'SELECT :timeout::int AS t')$$) ~ 'timeout', 'parameter "timeout" is refused, naming it');

-- Errors of the parser and the analyzer are their own.
SELECT throws_ok($$SELECT querygate.save_query('syntax', 'SELECT * FRM t')$$, '42601', NULL, 'syntax error: 42601');
SELECT throws_ok($$SELECT querygate.save_query('notable', 'SELECT * FROM no_such_table')$$, '42P01', NULL, 'unknown table: 42P01');
SELECT throws_ok($$SELECT querygate.save_query('nocolumn', 'SELECT no_such_column FROM t')$$, '42703', NULL, 'unknown column: 42703');
SELECT throws_ok($$SELECT querygate.save_query('nofunc', 'SELECT no_such_function(:a::int)')$$, '42883', NULL, 'unknown function: 42883');

-- The parameters found, in order of first use, with their inferred types (querygate.queries shows
-- them to administrators).
SELECT is((SELECT params FROM querygate.queries q WHERE q.name = e.name), e.params::jsonb, 'stored parameters of ' || e.name)
  FROM (VALUES
    ('cast', '[{"name": "a", "type": "integer"}]'),
    ('ctx', '[{"name": "x", "type": "integer"}]'),
    ('twice', '[{"name": "a", "type": "integer"}]'),
    ('under', '[{"name": "_a1", "type": "text"}, {"name": "B_2", "type": "integer"}]'),
    ('keywords', '[{"name": "real", "type": "integer"}, {"name": "limit", "type": "integer"}, {"name": "user", "type": "text"}]'),
    ('noparen', '[{"name": "x", "type": "integer"}, {"name": "l", "type": "text"}]'),
    ('in_string', '[]'), ('in_estring', '[]'), ('in_line_comment', '[]'), ('in_block_comment', '[]'),
    ('in_dollar', '[]'), ('in_ident', '[]'), ('casts', '[]'), ('slice', '[]'), ('slice_open', '[]'),
    ('mixed', '[{"name": "r", "type": "integer"}]'),
    ('values', '[{"name": "v", "type": "integer"}]'),
    ('ins', '[{"name": "x", "type": "integer"}, {"name": "l", "type": "text"}]'),
    ('upd', '[{"name": "l", "type": "text"}, {"name": "x", "type": "integer"}]'),
    ('merge', '[{"name": "x", "type": "integer"}]')) AS e(name, params);
SELECT is((SELECT sql FROM querygate.queries WHERE name = 'mixed'),
          $q$SELECT ':s' AS s /* :c */, $d$:d$d$ AS d, :r::int AS r, '1'::int AS c$q$,
          'the SQL is stored as written');

-- A refused save leaves nothing behind, and an accepted one is there.
SELECT is((SELECT count(*)::int FROM querygate.saved_query), 23, 'exactly the accepted queries are saved');
SELECT lives_ok($$SELECT querygate.drop_query('mixed')$$, 'a saved query can be dropped');

SELECT * FROM finish();

-- The parser's error, as psql shows it, points at the offending token of the saved SQL.
\set ON_ERROR_STOP false
\set VERBOSITY default
SELECT querygate.save_query('syntax', 'SELECT label FRM t WHERE x = :x');
\set ON_ERROR_STOP true
ROLLBACK;
