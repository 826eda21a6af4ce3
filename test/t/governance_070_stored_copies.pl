# The same rows under another name, over HTTP (src/policy/stored_copies.hpp): a partition read by
# its own name is masked as its partitioned table is, in every answer; a table attached as a
# partition after a worker kept its plan is masked from the next call (the attach invalidates the
# kept analysis); a materialized view is masked as its defining query's columns are; a partition
# read by its own name under an allow-list that names only its parent is refused.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'stored_copies', workers => 1);
$qg->sql(q{
	CREATE TABLE sc_patients (id int, region text, diagnosis text) PARTITION BY LIST (region);
	CREATE TABLE sc_patients_eu PARTITION OF sc_patients FOR VALUES IN ('eu');
	CREATE TABLE sc_patients_us (id int, region text, diagnosis text);
	INSERT INTO sc_patients VALUES (1, 'eu', 'flu');
	INSERT INTO sc_patients_us VALUES (2, 'us', 'cold');
	CREATE MATERIALIZED VIEW sc_diagnoses AS SELECT id, diagnosis FROM sc_patients;
	SELECT querygate.save_query('eu', 'SELECT id, diagnosis FROM sc_patients_eu ORDER BY id');
	SELECT querygate.save_query('us', 'SELECT id, diagnosis FROM sc_patients_us ORDER BY id');
	SELECT querygate.save_query('mv', 'SELECT id, diagnosis FROM sc_diagnoses ORDER BY id');
});
$qg->role('sc_reader', select => [qw(sc_patients sc_patients_eu sc_patients_us sc_diagnoses)]);
my $key = $qg->access(policy => 'sc', run_as => 'sc_reader', queries => [qw(eu us mv)],
	setup => q{SELECT querygate.mask('sc', 'sc_patients.diagnosis', 'mask');});

$qg->expect_rows($qg->get('/q/eu', key => $key), [ { id => 1, diagnosis => 'f***' } ],
	'a partition read by its own name: masked as its parent');
$qg->expect_rows($qg->get('/q/mv', key => $key), [ { id => 1, diagnosis => 'f***' } ],
	'a materialized view: masked as the column it copies');
$qg->expect_rows($qg->get('/q/us', key => $key), [ { id => 2, diagnosis => 'cold' } ],
	'a table on its own, its plan now kept by the one worker');
$qg->sql(q{ALTER TABLE sc_patients ATTACH PARTITION sc_patients_us FOR VALUES IN ('us')});
$qg->expect_rows($qg->get('/q/us', key => $key), [ { id => 2, diagnosis => 'c***' } ],
	'the same table attached as a partition: masked from the next call');
$qg->sql(q{ALTER TABLE sc_patients DETACH PARTITION sc_patients_us});
$qg->expect_rows($qg->get('/q/us', key => $key), [ { id => 2, diagnosis => 'cold' } ],
	'detached: its own again');

# An allow-list naming the parent covers reading through the parent, not a partition by its name.
$qg->sql(q{SELECT querygate.save_query('all', 'SELECT id FROM sc_patients ORDER BY id')});
my $listed = $qg->access(policy => 'listed', run_as => 'sc_reader', queries => [qw(all eu)],
	setup => q{SELECT querygate.allow_tables('listed', ARRAY['sc_patients']::regclass[]);});
$qg->expect_rows($qg->get('/q/all', key => $listed), [ { id => 1 } ], 'allow-list: through the parent');
$qg->expect_error($qg->get('/q/eu', key => $listed), 403, 'table_not_allowed',
	'allow-list: a partition by its own name', names => qr/sc_patients_eu/);

done_testing();
