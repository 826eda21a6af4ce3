-- The same rows under another name. A mask on a partitioned table or an inheritance parent covers
-- every partition and child, at any depth, read through the parent or by its own name, and one
-- attached later from then on; a materialized view is traced through its defining query as a view
-- is (a computed column of it is a computation with what it was computed from). An allow-list
-- entry covers the relation a query names: a parent covers its partitions when read through the
-- parent; a partition read by its own name needs an entry of its own.
\set ECHO none
\i sql/include/setup.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE sc_reader NOLOGIN;
CREATE TABLE patients (id int, region text, diagnosis text, note text) PARTITION BY LIST (region);
CREATE TABLE patients_eu PARTITION OF patients FOR VALUES IN ('eu') PARTITION BY HASH (id);
CREATE TABLE patients_eu_0 PARTITION OF patients_eu FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE patients_eu_1 PARTITION OF patients_eu FOR VALUES WITH (MODULUS 2, REMAINDER 1);
-- Made on its own, with its columns in another order; attached below.
CREATE TABLE patients_us (note text, diagnosis text, region text, id int);
CREATE TABLE people (id int, ssn text, name text);
CREATE TABLE staff (badge text) INHERITS (people);
CREATE TABLE contractors (agency text) INHERITS (staff);
CREATE VIEW patient_view AS SELECT id, diagnosis FROM patients;
CREATE MATERIALIZED VIEW diagnoses AS SELECT id, diagnosis, region FROM patients WITH NO DATA;
CREATE MATERIALIZED VIEW diagnoses_lower AS SELECT id, lower(diagnosis) AS d FROM patients WITH NO DATA;
CREATE MATERIALIZED VIEW via_view AS SELECT id, diagnosis AS dx FROM patient_view WITH NO DATA;
CREATE MATERIALIZED VIEW regions AS SELECT DISTINCT region FROM patients WITH NO DATA;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO sc_reader;

DO $$
BEGIN
    PERFORM querygate.create_policy('p', 'sc_reader');
    PERFORM querygate.mask('p', 'patients.diagnosis', 'hash');
    PERFORM querygate.mask('p', 'people.ssn', 'mask');
    PERFORM querygate.create_policy('listed', 'sc_reader');
    PERFORM querygate.allow_tables('listed', ARRAY['patients', 'diagnoses']::regclass[]);
END $$;

\i sql/include/explain_helpers.sql
-- The action of each output column ("none" for none).
CREATE FUNCTION pg_temp.masks(sql text) RETURNS text[] LANGUAGE sql AS $$
    SELECT array(SELECT coalesce(c->>'mask', 'none')
                   FROM jsonb_array_elements(pg_temp.ex(sql)->'columns') WITH ORDINALITY AS x(c, i)
                  ORDER BY i)
$$;

SELECT plan(22);

-- 1. Partitions, at any depth, read by their own names.
SELECT is(pg_temp.masks('SELECT id, diagnosis, note FROM patients'), ARRAY['none', 'hash', 'none'],
          'through the parent');
SELECT is(pg_temp.masks('SELECT id, diagnosis, note FROM patients_eu'), ARRAY['none', 'hash', 'none'],
          'a partition read by its own name');
SELECT is(pg_temp.masks('SELECT id, diagnosis FROM patients_eu_1'), ARRAY['none', 'hash'],
          'a partition of a partition');
SELECT is(pg_temp.masks('SELECT p FROM patients_eu_0 p'), ARRAY['hash'],
          'a whole row of a partition');
SELECT is((SELECT array_agg(s ORDER BY s) FROM jsonb_array_elements_text(
               pg_temp.ex('SELECT diagnosis FROM patients_eu_0')->'columns'->0->'sources') AS s),
          ARRAY['public.patients.diagnosis', 'public.patients_eu.diagnosis',
                'public.patients_eu_0.diagnosis'],
          'explain lists the partition''s column and its ancestors''');
SELECT is(pg_temp.refusal('SELECT id FROM patients_eu_1 WHERE diagnosis = :d'), 'mask_predicate',
          'a partition''s masked column in WHERE is a masked predicate');

-- 2. A partition attached later is covered from then on (its columns in another order).
SELECT is(pg_temp.masks('SELECT diagnosis, note FROM patients_us'), ARRAY['none', 'none'],
          'a table on its own: no rule names it');
ALTER TABLE patients ATTACH PARTITION patients_us FOR VALUES IN ('us');
SELECT is(pg_temp.masks('SELECT diagnosis, note FROM patients_us'), ARRAY['hash', 'none'],
          'the same table once attached');
ALTER TABLE patients DETACH PARTITION patients_us;
SELECT is(pg_temp.masks('SELECT diagnosis, note FROM patients_us'), ARRAY['none', 'none'],
          'detached: its own again');

-- 3. Inheritance children, at any depth; a child's own columns are its own.
SELECT is(pg_temp.masks('SELECT id, ssn, name, badge FROM staff'), ARRAY['none', 'mask', 'none', 'none'],
          'an inheritance child');
SELECT is(pg_temp.masks('SELECT ssn, agency FROM contractors'), ARRAY['mask', 'none'],
          'a grandchild');
SELECT is(pg_temp.masks('SELECT ssn FROM ONLY people'), ARRAY['mask'], 'the parent alone');
SELECT is(pg_temp.refusal('SELECT badge FROM staff ORDER BY ssn'), 'mask_predicate',
          'a child''s inherited masked column in ORDER BY');

-- 4. Materialized views are traced through their defining queries.
SELECT is(pg_temp.masks('SELECT id, diagnosis, region FROM diagnoses'), ARRAY['none', 'hash', 'none'],
          'a materialized view''s column of a masked column');
SELECT is(pg_temp.masks('SELECT dx FROM via_view'), ARRAY['hash'],
          'a materialized view over a view');
SELECT is(pg_temp.masks('SELECT m FROM diagnoses m'), ARRAY['hash'],
          'a whole row of a materialized view');
SELECT is(pg_temp.refusal('SELECT d FROM diagnoses_lower'), 'mask_expression',
          'a materialized view''s computed column: a computation with the masked column');
SELECT is(pg_temp.refusal('SELECT id FROM diagnoses WHERE diagnosis = :d'), 'mask_predicate',
          'its masked column in WHERE');
SELECT is(pg_temp.masks('SELECT region FROM regions'), ARRAY['none'],
          'a materialized view of unmasked columns');

-- 5. Allow-lists: an entry covers the relation a query names.
SELECT is(pg_temp.refusal('SELECT id, note FROM patients', 'listed'), 'none',
          'allow-list: the parent, read through its name (its partitions with it)');
SELECT is(pg_temp.refusal('SELECT id, note FROM patients_eu', 'listed'), 'table_not_allowed',
          'allow-list: a partition read by its own name needs its own entry');
SELECT is(pg_temp.refusal('SELECT id FROM diagnoses', 'listed'), 'none',
          'allow-list: a materialized view counts as itself, as a view does');

SELECT * FROM finish();
ROLLBACK;
