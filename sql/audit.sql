-- The audit log (querygate.audit): every change to a catalog table, in the same transaction as the
-- change; who asked for it (the administration function's caller, not the bootstrap superuser the
-- function writes as), through which function, the row before and after without its secret; nothing
-- for a change rolled back, nor for the extension's own install; a direct change is the current
-- user's, with no function, also right after a function that failed; administrators read it and
-- cannot change it.
\set ECHO none
\i sql/include/setup.sql
\i sql/include/as_role.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE au_admin NOLOGIN;
CREATE ROLE au_app NOLOGIN;
GRANT querygate_admin TO au_admin;
GRANT au_app TO au_admin;
CREATE TABLE au_items (id int PRIMARY KEY, secret text);
GRANT SELECT ON au_items TO au_app, au_admin;

-- The audit rows of one catalog table and object, oldest first, as "action operation".
CREATE FUNCTION pg_temp.trail(cat text, obj text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(coalesce(action, '(direct)') || ' ' || operation, ', ' ORDER BY at)
      FROM querygate.audit WHERE catalog = cat AND object IS NOT DISTINCT FROM obj
$$;

SELECT plan(27);

SELECT is((SELECT count(*)::int FROM querygate.audit), 0, 'CREATE EXTENSION leaves no audit row (its hash-mask secret is not a change)');

SELECT is(pg_temp.as_role('au_admin', $$SELECT querygate.save_query('au_q', 'SELECT id FROM au_items WHERE id = :id')$$),
          'no error', 'an administrator saves a query');
SELECT is((SELECT format('%s %s %s %s', actor, action, operation, after->>'sql') FROM querygate.audit
            WHERE catalog = 'saved_query' AND object = 'au_q'),
          'au_admin save_query insert SELECT id FROM au_items WHERE id = :id',
          'its row: the caller (not the role the function writes as), the function, the row after');
SELECT is((SELECT session_role FROM querygate.audit WHERE catalog = 'saved_query'), session_user::text,
          'and the session''s login role');
SELECT is((SELECT count(*)::int FROM querygate.audit WHERE before IS NOT NULL), 0, 'an insert has no row before');

SELECT is(pg_temp.as_role('au_admin', $$SELECT querygate.save_query('au_q', 'SELECT id, secret FROM au_items WHERE id = :id')$$),
          'no error', 'saved again');
SELECT is((SELECT format('%s | %s', before->>'sql', after->>'sql') FROM querygate.audit
            WHERE catalog = 'saved_query' AND operation = 'update'),
          'SELECT id FROM au_items WHERE id = :id | SELECT id, secret FROM au_items WHERE id = :id',
          'a second save is an update, with the row before and after');

SELECT is(pg_temp.as_role('au_admin', $$
    SELECT querygate.create_policy('au_p', 'au_app');
    SELECT querygate.grant_query('au_p', 'au_q');
    SELECT querygate.mask('au_p', 'au_items.secret', 'hash');
    SELECT querygate.allow_tables('au_p', '{au_items}');
    SELECT querygate.set_policy('au_p', mask_predicates => 'allow')$$), 'no error', 'a policy, its grant, a mask, an allow-list, a setting');
SELECT is(pg_temp.trail('policy', 'au_p'), 'create_policy insert, allow_tables update, set_policy update',
          'the policy''s rows, one per change, each with its function');
SELECT is((SELECT format('%s %s %s', action, policy, object) FROM querygate.audit WHERE catalog = 'query_grant'),
          'grant_query au_p au_q', 'the grant: its policy and its query');
SELECT is((SELECT format('%s %s %s %s', action, policy, object, after->>'action') FROM querygate.audit WHERE catalog = 'mask_rule'),
          'mask au_p au_items.secret hash', 'the mask: its policy, its pattern, its action');
SELECT is((SELECT format('%s -> %s', before->>'mask_predicates', after->>'mask_predicates') FROM querygate.audit
            WHERE catalog = 'policy' AND action = 'set_policy'),
          'refuse -> allow', 'an update shows what changed');

SELECT pg_temp.as_role('au_admin', $$SELECT querygate.create_key('au_k', 'au_p')$$) AS made_key \gset
SELECT is(:'made_key'::text, 'no error', 'a key');
SELECT is((SELECT format('%s %s %s %s', action, policy, object, after ? 'key_hash') FROM querygate.audit WHERE catalog = 'api_key'),
          'create_key au_p au_k f', 'its row has no key hash');
SELECT is(pg_temp.as_role('au_admin', $$SELECT querygate.revoke_key('au_k')$$), 'no error', 'the key revoked');
SELECT is((SELECT format('%s %s %s', action, before->>'revoked_at' IS NULL, after->>'revoked_at' IS NOT NULL)
             FROM querygate.audit WHERE catalog = 'api_key' AND operation = 'update'),
          'revoke_key t t', 'the revocation: revoked_at before and after');
SELECT is((SELECT count(*)::int FROM querygate.audit a, querygate.api_key k
            WHERE strpos(a::text, encode(k.key_hash, 'hex')) > 0 OR a.before ? 'key_hash' OR a.after ? 'key_hash'),
          0, 'no audit row holds a key''s hash');

-- Rolled back: no row.
SAVEPOINT before_gone;
DO $$ BEGIN PERFORM querygate.save_query('au_gone', 'SELECT 1'); END $$;
ROLLBACK TO before_gone;
SELECT is((SELECT count(*)::int FROM querygate.audit WHERE object = 'au_gone'), 0, 'a change rolled back leaves no audit row');

-- A function that fails inside its catalog session (no such query), then a direct change: the
-- direct change is not put on the failed function's account.
SELECT is(pg_temp.as_role('au_admin', $$SELECT querygate.grant_query('au_p', 'no_such_query')$$),
          '42704: saved query "no_such_query" does not exist', 'a grant that fails');
UPDATE querygate.saved_query SET description = 'direct' WHERE name = 'au_q';
SELECT is((SELECT format('%s %s %s', coalesce(action, '(direct)'), actor, after->>'description') FROM querygate.audit
            WHERE catalog = 'saved_query' AND after->>'description' = 'direct'),
          '(direct) ' || current_user || ' direct', 'a direct change: the current user, no function');

UPDATE querygate.mask_secret SET created_at = created_at;
SELECT is((SELECT format('%s %s %s', operation, before ? 'secret', after ? 'secret') FROM querygate.audit WHERE catalog = 'mask_secret'),
          'update f f', 'the hash mask''s secret is in no audit row');

DO $$ BEGIN PERFORM querygate.set_jwks('{"keys": []}'); END $$;
TRUNCATE querygate.jwks;
SELECT is(pg_temp.trail('jwks', NULL), 'set_jwks insert, (direct) truncate', 'the JWKS: set by its function, truncated directly');

-- Dropping a policy with its active key: the key's revocation, the policy, and what cascades from
-- it (its grant and mask, both keys' policy set to NULL, the one revoked before too), all on
-- drop_policy's account.
SELECT querygate.create_key('au_k2', 'au_p') AS au_k2_secret \gset
SELECT is(pg_temp.as_role('au_admin', $$SELECT querygate.drop_policy('au_p', cascade => true)$$), 'no error', 'the policy dropped');
SELECT is((SELECT string_agg(format('%s %s %s %s', catalog, operation, policy, object), ', '
                             ORDER BY catalog, operation, object)
             FROM querygate.audit WHERE action = 'drop_policy'),
          'api_key update au_p au_k, api_key update au_p au_k2, api_key update au_p au_k2, mask_rule delete au_p au_items.secret, policy delete au_p au_p, query_grant delete au_p au_q',
          'every row it changed, the cascades too, each with its policy');
SELECT is((SELECT count(DISTINCT actor)::int FROM querygate.audit WHERE action = 'drop_policy'), 1, 'and one actor for all');

-- Administrators read the log and cannot change it.
SELECT is(pg_temp.as_role('au_admin', 'SELECT count(*) FROM querygate.audit'), 'no error', 'an administrator reads the log');
SELECT is(pg_temp.as_role('au_admin', 'DELETE FROM querygate.audit'), '42501: permission denied for table audit',
          'and cannot delete from it');

SELECT * FROM finish();
ROLLBACK;
