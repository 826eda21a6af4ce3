# The same rows under another name, over HTTP (src/policy/stored_copies.hpp): a partition read by
# its own name is masked as its partitioned table is, in every answer; a table attached as a
# partition after a worker kept its plan is masked from the next call (the attach invalidates the
# kept analysis); a materialized view is masked as its defining query's columns are; a partition
# read by its own name under an allow-list that names only its parent is refused. Every call is
# also sent as POST /sql with the query's text, by a twin of its policy with the same rules and
# list, granted ad-hoc SQL (QuerygateTest::both), and answers alike, except that a relation
# outside the list is name_not_allowed there, by design.
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
$qg->adhoc_twin('sc', tables => [qw(sc_patients sc_patients_eu sc_patients_us sc_diagnoses)]);

$qg->expect_rows($_, [ { id => 1, diagnosis => 'f***' } ], 'a partition read by its own name: masked as its parent')
  for $qg->get_both('/q/eu', key => $key);
$qg->expect_rows($_, [ { id => 1, diagnosis => 'f***' } ], 'a materialized view: masked as the column it copies')
  for $qg->get_both('/q/mv', key => $key);
$qg->expect_rows($_, [ { id => 2, diagnosis => 'cold' } ], 'a table on its own, its plan now kept by the one worker')
  for $qg->get_both('/q/us', key => $key);
$qg->sql(q{ALTER TABLE sc_patients ATTACH PARTITION sc_patients_us FOR VALUES IN ('us')});
$qg->expect_rows($_, [ { id => 2, diagnosis => 'c***' } ], 'the same table attached as a partition: masked from the next call')
  for $qg->get_both('/q/us', key => $key);
$qg->sql(q{ALTER TABLE sc_patients DETACH PARTITION sc_patients_us});
$qg->expect_rows($_, [ { id => 2, diagnosis => 'cold' } ], 'detached: its own again')
  for $qg->get_both('/q/us', key => $key);

# An allow-list naming the parent covers reading through the parent, not a partition by its name.
$qg->sql(q{SELECT querygate.save_query('all', 'SELECT id FROM sc_patients ORDER BY id')});
my $listed = $qg->access(policy => 'listed', run_as => 'sc_reader', queries => [qw(all eu)],
	setup => q{SELECT querygate.allow_tables('listed', ARRAY['sc_patients']::regclass[]);});
$qg->adhoc_twin('listed');
$qg->expect_rows($_, [ { id => 1 } ], 'allow-list: through the parent') for $qg->get_both('/q/all', key => $listed);
$qg->expect_error($_, 403, 'table_not_allowed', 'allow-list: a partition by its own name', names => qr/sc_patients_eu/,
	sql => [ 403, 'name_not_allowed' ])
  for $qg->get_both('/q/eu', key => $listed);

done_testing();
