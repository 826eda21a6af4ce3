-- API keys: the secret is "qg_" + 43 base64url characters (256 random bits), every key gets a new
-- one, and only its SHA-256 is stored: no column of any catalog table holds the secret.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE qg_keys_role NOLOGIN;
DO $$
BEGIN
    PERFORM querygate.save_query('q', 'SELECT 1 AS one');
    PERFORM querygate.create_policy('p', 'qg_keys_role');
    PERFORM querygate.grant_query('p', 'q');
END $$;
SELECT querygate.create_key('k1', 'p') AS secret1 \gset
SELECT querygate.create_key('k2', 'p', now() + interval '1 day') AS secret2 \gset

-- Rows of any table in schema querygate whose text contains needle.
CREATE FUNCTION pg_temp.rows_containing(needle text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    t regclass;
    n bigint;
    total bigint := 0;
BEGIN
    FOR t IN SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'querygate'::regnamespace AND c.relkind IN ('r', 'p') LOOP
        EXECUTE format('SELECT count(*) FROM %s x WHERE strpos(x::text, $1) > 0', t) INTO n USING needle;
        total := total + n;
    END LOOP;
    RETURN total;
END $$;

SELECT plan(11);

SELECT matches(:'secret1'::text, '^qg_[A-Za-z0-9_-]{43}$', 'the secret is qg_ + 43 base64url characters');
SELECT matches(:'secret2'::text, '^qg_[A-Za-z0-9_-]{43}$', 'the secret of a key with expires_at too');
SELECT matches(right(:'secret1', 1)::text, '^[AEIMQUYcgkosw048]$', 'the 43 characters encode exactly 256 bits (last one has 2 zero bits)');
SELECT isnt(:'secret1'::text, :'secret2'::text, 'two keys, two secrets');

CREATE TEMP TABLE many AS
SELECT querygate.create_key('bulk' || i, 'p') AS s FROM generate_series(1, 200) AS i;
SELECT is((SELECT count(DISTINCT s)::int FROM many), 200, '200 keys, 200 distinct secrets');
SELECT is((SELECT count(*)::int FROM many WHERE s !~ '^qg_[A-Za-z0-9_-]{43}$'), 0, 'all 200 well formed');
SELECT cmp_ok((SELECT count(DISTINCT c)::int FROM many, regexp_split_to_table(substr(s, 4, 42), '') AS c), '=', 64,
              'the secrets use the whole base64url alphabet');

-- Only the SHA-256 is stored.
SELECT is(pg_temp.rows_containing(:'secret1'), 0::bigint, 'no catalog row contains the secret');
SELECT is(pg_temp.rows_containing(substr(:'secret1', 4)), 0::bigint, 'no catalog row contains the secret without its prefix');
SELECT is((SELECT count(*)::int
             FROM querygate.api_key k, jsonb_each_text(to_jsonb(k)) AS e
            WHERE e.value IN ('\x' || encode(sha256(convert_to(:'secret1', 'UTF8')), 'hex'),
                              encode(sha256(convert_to(:'secret1', 'UTF8')), 'hex'))),
          1, 'querygate.api_key holds the SHA-256 of the secret (bytea or hex)');
SELECT is((SELECT count(*)::int FROM querygate.api_key), 202, 'one row per key');

SELECT * FROM finish();
ROLLBACK;
