-- A C++ exception inside a SQL function (std::bad_alloc, thrown where querygate.fault_injection
-- says) is an ERROR with SQLSTATE XX000, never the end of the backend: every SQL-callable function
-- goes through one wrapper (QUERYGATE_SQL_FUNCTION, src/pg/pg_guard.hpp). And one thrown while
-- PostgreSQL-style code has an error context callback pushed leaves nothing dangling behind it:
-- the next error of the session reports normally.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE qg_fault_role NOLOGIN;
CREATE TABLE fault_t (id int);
SELECT querygate.save_query('q', 'SELECT 1 AS one');
SELECT querygate.create_policy('p', 'qg_fault_role');
SELECT querygate.grant_query('p', 'q');
SELECT querygate.create_key('k', 'p') IS NOT NULL;
SELECT plan(23);

SET querygate.fault_injection = 'sql_function';
SELECT throws_ok(format('SELECT %s', call), 'XX000', 'querygate internal error: std::bad_alloc',
                 call || ': an exception is an ERROR')
  FROM unnest(ARRAY[
    $$querygate.random_bytes(8)$$,
    $$querygate.save_query('q2', 'SELECT 2')$$,
    $$querygate.drop_query('q')$$,
    $$querygate.create_policy('p2', 'qg_fault_role')$$,
    $$querygate.drop_policy('p')$$,
    $$querygate.grant_query('p', 'q')$$,
    $$querygate.revoke_query('p', 'q')$$,
    $$querygate.create_key('k2', 'p')$$,
    $$querygate.revoke_key('k')$$,
    $$querygate.allow_tables('p', ARRAY['fault_t']::regclass[])$$,
    $$querygate.mask('p', 'fault_t.id', 'null')$$,
    $$querygate.unmask('p', 'fault_t.id')$$,
    $$querygate.grant_writes('p', ARRAY['insert'])$$,
    $$querygate.set_policy('p', 'allow')$$,
    $$querygate.set_jwks('{"keys": []}')$$,
    $$querygate.isolate_tenant('fault_t', 'id')$$,
    $$querygate.explain('p', 'q')$$,
    $$querygate.http_status_notice()$$
  ]) AS call;
SELECT throws_ok($$INSERT INTO querygate.mask_rule (policy, pattern, action) VALUES ('p', 'x.y', 'null')$$,
                 'XX000', 'querygate internal error: std::bad_alloc',
                 'the catalog trigger function too');
RESET querygate.fault_injection;
SELECT is((SELECT count(*) FROM querygate.saved_query)::int, 1, 'nothing was saved by a failed call');
SELECT lives_ok($$SELECT querygate.save_query('q2', 'SELECT 2 AS two')$$, 'and the session goes on');

-- Thrown with the analysis' error context callback pushed.
SET querygate.fault_injection = 'analysis';
SELECT throws_ok($$SELECT querygate.save_query('q3', 'SELECT 3 AS three')$$, 'XX000',
                 'querygate internal error: std::bad_alloc', 'an exception in the analysis is an ERROR');
RESET querygate.fault_injection;
SELECT throws_ok($$SELECT querygate.save_query('q4', 'SELEC 4')$$, '42601', NULL,
                 'the next error reports normally (no dangling error context)');

SELECT * FROM finish();
ROLLBACK;
