-- What the database checks on a row a write changes, as querygate.explain shows it: a CHECK
-- constraint, a unique index over several columns, a foreign key (both ways), a stored generated
-- column, a row-level security WITH CHECK and a trigger each read columns the statement never
-- names, and the call's outcome (a row written, or an error) tells what they compared. So each
-- column such a check reads is a use like a predicate: a masked one, as stored or as assigned
-- from a masked source, is refused with mask_predicate (at grant and at call), with the same
-- opt-out, and explain lists every check by its name.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
SELECT plan(28);

\i sql/include/explain_fixture.sql
CREATE TABLE staff (id int PRIMARY KEY, salary int, salary_cap int, CONSTRAINT staff_cap CHECK (salary <= salary_cap));
CREATE TABLE pairs (id int PRIMARY KEY, a text, b text, CONSTRAINT pairs_ab UNIQUE (a, b));
CREATE TABLE parents (id int PRIMARY KEY, code text UNIQUE, label text);
CREATE TABLE children (id int PRIMARY KEY, parent_code text CONSTRAINT children_parent REFERENCES parents (code), note text);
CREATE TABLE gen (id int PRIMARY KEY, secret int, twice int GENERATED ALWAYS AS (secret * 2) STORED, v int,
                  CONSTRAINT gen_twice CHECK (twice < v));
CREATE TABLE guarded (id int PRIMARY KEY, owner text, v int);
ALTER TABLE guarded ENABLE ROW LEVEL SECURITY;
CREATE POLICY guarded_len ON guarded USING (true) WITH CHECK (v < length(owner));
CREATE TABLE looked (id int PRIMARY KEY, v int);
ALTER TABLE looked ENABLE ROW LEVEL SECURITY;
CREATE POLICY looked_sub ON looked USING (true) WITH CHECK (v < (SELECT count(*) FROM users));
CREATE TABLE audited (id int PRIMARY KEY, v int);
CREATE FUNCTION audited_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER audited_touch BEFORE UPDATE ON audited FOR EACH ROW EXECUTE FUNCTION audited_touch();
CREATE TABLE guesses (v text CONSTRAINT guesses_v UNIQUE);
CREATE TABLE copies (id int PRIMARY KEY, s text, g text, CONSTRAINT copies_differ CHECK (s <> g));
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO qa_reader;

DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'qa_reader');
    PERFORM querygate.mask('p', 'staff.salary', 'hash');
    PERFORM querygate.mask('p', 'pairs.b', 'hash');
    PERFORM querygate.mask('p', 'parents.code', 'hash');
    PERFORM querygate.mask('p', 'children.parent_code', 'hash');
    PERFORM querygate.mask('p', 'gen.secret', 'hash');
    PERFORM querygate.mask('p', 'guarded.owner', 'mask');
    PERFORM querygate.mask('p', 'users.email', 'hash');
    PERFORM querygate.mask('p', 'guesses.v', 'hash');
    PERFORM querygate.mask('p', 'copies.s', 'hash');
    PERFORM querygate.grant_writes('p', ARRAY['insert', 'update', 'delete']);
    PERFORM querygate.create_policy('plain', 'qa_reader');
    PERFORM querygate.grant_writes('plain', ARRAY['insert', 'update', 'delete']);
END $$;

-- 1. A CHECK constraint: the stored salary is compared with the cap the caller writes.
SELECT is(pg_temp.refusal('UPDATE staff SET salary_cap = :cap WHERE id = :id'), 'mask_predicate',
          'CHECK over a masked column the write leaves as stored');
SELECT is(pg_temp.ex('UPDATE staff SET salary_cap = :cap WHERE id = :id')->'refused'->>'reason',
          'the write is checked by constraint staff_cap on public.staff, which compares the masked column public.staff.salary',
          'the refusal names the constraint and the column');
SELECT ok(pg_temp.ex('UPDATE staff SET salary_cap = :cap WHERE id = :id')->'row_checks' @>
          '[{"by": "constraint staff_cap on public.staff", "column": "public.staff.salary", "stored": true}]',
          'explain lists the check, the column it reads and that it is the stored value');
SELECT is(pg_temp.refusal('UPDATE staff SET salary = :s, salary_cap = :cap WHERE id = :id'), 'none',
          'both columns written by the call: the check compares only the caller''s values');
SELECT is(pg_temp.refusal('INSERT INTO staff (id, salary, salary_cap) VALUES (:id, :s, :c)'), 'none',
          'an insert: the check reads only the new row');
SELECT is(pg_temp.refusal('UPDATE staff SET salary_cap = :cap WHERE id = :id', 'plain'), 'none',
          'a policy that masks nothing');

-- 2. A unique index over several columns compares the new row with every other row.
SELECT is(pg_temp.refusal('UPDATE pairs SET a = :a WHERE id = :id'), 'mask_predicate',
          'unique (a, b), a written: the stored b is compared');
SELECT is(pg_temp.refusal('INSERT INTO pairs (id, a, b) VALUES (:id, :a, :b)'), 'mask_predicate',
          'unique (a, b) on insert: other rows'' b are compared');
SELECT is(pg_temp.refusal('UPDATE pairs SET id = :n WHERE id = :id'), 'none',
          'a write that changes no column of the index');
SELECT is(pg_temp.refusal('INSERT INTO guesses (v) SELECT email FROM users WHERE id = :id'), 'mask_predicate',
          'a masked value copied into a unique column is compared with the rows there');
SELECT is(pg_temp.ex('INSERT INTO copies (id, s, g) SELECT :id, email, :guess FROM users WHERE id = :uid')->'refused'->>'reason',
          'the write is checked by constraint copies_differ on public.copies, which compares the masked column public.users.email',
          'a CHECK over a value the write copies from a masked column compares that column');

-- 3. Foreign keys, both ways.
SELECT is(pg_temp.refusal('INSERT INTO children (id, parent_code, note) VALUES (:id, :code, :n)'), 'mask_predicate',
          'a foreign key looks up the masked referenced column');
SELECT is(pg_temp.refusal('UPDATE children SET note = :n WHERE id = :id'), 'none',
          'a write that leaves the key alone');
SELECT is(pg_temp.refusal('DELETE FROM parents WHERE id = :id'), 'mask_predicate',
          'a delete: the referencing rows are looked up');
SELECT ok(pg_temp.ex('DELETE FROM parents WHERE id = :id')->'row_checks' @>
          '[{"by": "foreign key children_parent on public.children", "column": "public.children.parent_code", "stored": true}]',
          'explain names the referencing table''s key');
SELECT is(pg_temp.refusal('UPDATE parents SET label = :l WHERE id = :id'), 'none',
          'an update that leaves the referenced key alone');

-- 4. A stored generated column is the columns it is computed from.
SELECT is(pg_temp.refusal('UPDATE gen SET v = :v WHERE id = :id'), 'mask_predicate',
          'CHECK over a generated column computed from a masked one');
SELECT is(pg_temp.refusal('UPDATE gen SET secret = :s, v = :v WHERE id = :id'), 'none',
          'the generated column recomputed from the caller''s value');

-- 5. Row-level security's WITH CHECK.
SELECT is(pg_temp.refusal('UPDATE guarded SET v = :v WHERE id = :id'), 'mask_predicate',
          'WITH CHECK over a masked column');
SELECT ok(pg_temp.ex('UPDATE guarded SET v = :v WHERE id = :id')->'row_checks' @>
          '[{"by": "row-level security policy guarded_len on public.guarded", "column": "public.guarded.owner", "stored": true}]',
          'explain names the policy');
SELECT is(pg_temp.refusal('UPDATE looked SET v = :v WHERE id = :id'), 'mask_predicate',
          'WITH CHECK with a subquery, which reads what no column list covers');

-- 6. Triggers: their code can read anything.
SELECT is(pg_temp.refusal('UPDATE audited SET v = :v WHERE id = :id'), 'mask_predicate',
          'a table with a user trigger, under a masking policy');
SELECT ok(pg_temp.ex('UPDATE audited SET v = :v WHERE id = :id')->'row_checks' @>
          '[{"by": "trigger audited_touch on public.audited", "column": null, "stored": true}]',
          'explain names the trigger');
SELECT is(pg_temp.refusal('INSERT INTO audited (id, v) VALUES (:id, :v)'), 'none',
          'a write the trigger does not fire on');
SELECT is(pg_temp.refusal('UPDATE audited SET v = :v WHERE id = :id', 'plain'), 'none',
          'a policy that masks nothing');

-- 7. At grant time, and the opt-out.
DO $$ BEGIN PERFORM querygate.save_query('cap', 'UPDATE staff SET salary_cap = :cap WHERE id = :id'); END $$;
SELECT throws_ok($$SELECT querygate.grant_query('p', 'cap')$$, '42501',
                 'policy "p" would refuse saved query "cap": the write is checked by constraint staff_cap on public.staff, which compares the masked column public.staff.salary',
                 'grant_query refuses a write every call would refuse');
DO $$ BEGIN PERFORM querygate.set_policy('p', mask_predicates => 'allow'); END $$;
SELECT is(pg_temp.refusal('UPDATE audited SET v = :v WHERE id = :id'), 'none', 'opted out: the trigger is allowed');
SELECT lives_ok($$SELECT querygate.grant_query('p', 'cap')$$, 'opted out: granted');

SELECT * FROM finish();
ROLLBACK;
