-- The mask actions that keep part of a text (querygate.mask): mask (a first character and ***),
-- mask_email (the same, and the domain of a value that is an e-mail address) and partial(lead,
-- trail) are accepted in any case and with blanks inside partial's parentheses, stored as one
-- normalised spelling, refused otherwise with 22023 and the list of actions; the catalog table
-- refuses any other spelling written to it directly; and where several rules match one column the
-- strictest wins: drop > null > mask > hash > mask_email > partial, and of two partials the one
-- showing fewer characters.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE ma_reader NOLOGIN;
CREATE TABLE ma_people (id int PRIMARY KEY, email text, card text, code char(8), nick text, note text);
GRANT SELECT ON ma_people TO ma_reader;
DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'ma_reader');
    PERFORM querygate.save_query('people', 'SELECT id, email, card, code, nick, note FROM ma_people');
END $$;

-- The action explain gives each output column of the saved query under p.
CREATE FUNCTION pg_temp.masks() RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT coalesce(c->>'mask', 'none')
                   FROM jsonb_array_elements(querygate.explain('p', 'people')->'columns')
                        WITH ORDINALITY AS x(c, i) ORDER BY i)
$$;
CREATE FUNCTION pg_temp.stored(pattern text) RETURNS text LANGUAGE sql AS $$
    SELECT action FROM querygate.mask_rule WHERE policy = 'p' AND pattern = $1
$$;

SELECT plan(24);

-- 1. Accepted, and stored as one spelling.
SELECT lives_ok(format('SELECT querygate.mask(''p'', %L, %L)', pattern, action),
                format('mask(%s, %s) is accepted', pattern, action))
  FROM (VALUES ('ma_people.email', 'MASK_EMAIL'), ('ma_people.card', 'Partial( 2 , 4 )'),
               ('ma_people.code', 'partial(1,0)'), ('ma_people.nick', 'partial(0,31)'),
               ('ma_people.note', 'mask')) AS v(pattern, action);
SELECT is(pg_temp.stored('ma_people.email'), 'mask_email', 'mask_email is stored in lower case');
SELECT is(pg_temp.stored('ma_people.card'), 'partial(2,4)', 'partial is stored without blanks');
SELECT is(pg_temp.stored('ma_people.nick'), 'partial(0,31)', 'partial(0,31): the largest count');
SELECT is(pg_temp.masks(),
          ARRAY['none', 'mask_email', 'partial(2,4)', 'partial(1,0)', 'partial(0,31)', 'mask'],
          'explain names each column''s action as it is stored');
SELECT is((SELECT masks ->> 'ma_people.card' FROM querygate.policies WHERE name = 'p'),
          'partial(2,4)', 'the policies view shows partial with its counts');

-- 2. Refused, with the list of actions, and nothing stored.
SELECT throws_ok(format('SELECT querygate.mask(''p'', ''ma_people.id'', %L)', action), '22023',
                 format('invalid mask rule "ma_people.id": action must be hash, mask, mask_email, '
                        || 'partial(lead,trail) with counts of 0 to 31, null or drop'),
                 format('mask(..., %s) is refused', action))
  FROM unnest(ARRAY['partial', 'partial(32,0)', 'partial(2)', 'partial(2,4', 'partial(-1,2)',
                    'partial(2;4)', 'mask-email', 'email']) AS action;
SELECT is(pg_temp.stored('ma_people.id'), NULL, 'a refused rule stores nothing');

-- 3. The catalog table takes only the normalised spellings.
SELECT throws_ok(format('INSERT INTO querygate.mask_rule (policy, pattern, action) '
                        || 'VALUES (''p'', ''x.y'', %L)', action),
                 '23514', NULL, format('mask_rule refuses the action %s written directly', action))
  FROM unnest(ARRAY['partial(2, 4)', 'Mask_email', 'partial(32,0)', 'partial(02,4)']) AS action;

-- 4. The strictest of the rules matching one column wins.
DO $$
BEGIN
    PERFORM querygate.mask('p', '*.card', 'partial(1,1)');
    PERFORM querygate.mask('p', 'public.ma_people.nick', 'mask_email');
    PERFORM querygate.mask('p', 'ma_*.email', 'hash');
END $$;
SELECT is(pg_temp.masks(),
          ARRAY['none', 'hash', 'partial(1,1)', 'partial(1,0)', 'mask_email', 'mask'],
          'hash beats mask_email, mask_email beats partial, partial(1,1) beats partial(2,4)');

SELECT * FROM finish();
ROLLBACK;
