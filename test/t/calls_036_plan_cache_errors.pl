# A kept plan that cannot be remade leaves the plan cache as it was. Each query here is called
# once (its plan kept), then made unplannable for its policy's role: re-saved (a new revision: the
# next call must prepare it again) before its schema's USAGE is revoked or its table dropped, or
# left as it was (its plan is still good, but its analysis must be made again and fails). Every
# later call of it fails with the documented error; meanwhile another query is re-saved again and
# again, so new plans take the memory the failed ones gave back, and every call of it is answered
# with its row; the worker never restarts; and once the queries can be planned again they are
# served. (The plan cache used to free the old plan, or reset the old analysis, before making the
# new one, and kept pointing at it when that failed: the next call freed it again, by then
# another query's plan.)
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'plan_cache_errors', workers => 1);
$qg->sql(q{
	CREATE ROLE pc_app NOLOGIN;
	CREATE SCHEMA pc_s;
	CREATE TABLE pc_s.hidden (id int PRIMARY KEY, v text);
	INSERT INTO pc_s.hidden VALUES (1, 'one');
	CREATE TABLE pc_gone (id int PRIMARY KEY, v text);
	INSERT INTO pc_gone VALUES (1, 'gone');
	CREATE TABLE pc_other (id int PRIMARY KEY, v text);
	INSERT INTO pc_other SELECT g, 'other ' || g FROM generate_series(1, 10) g;
	GRANT USAGE ON SCHEMA pc_s TO pc_app;
	GRANT SELECT ON pc_s.hidden, pc_gone, pc_other TO pc_app;
	SELECT querygate.save_query('in_schema', 'SELECT id, v FROM pc_s.hidden WHERE id = :id');
	SELECT querygate.save_query('kept', 'SELECT v, id FROM pc_s.hidden WHERE id = :id');
	SELECT querygate.save_query('dropped', 'SELECT id, v FROM pc_gone WHERE id = :id');
	SELECT querygate.save_query('other', 'SELECT id, v FROM pc_other WHERE id = :id');
});
my $key = $qg->access(policy => 'pc', run_as => 'pc_app', queries => [qw(in_schema kept dropped other)]);
my $pids = $qg->worker_pids;
is(scalar @$pids, 1, 'one worker serves every call');

$qg->expect_rows($qg->get('/q/in_schema?id=1', key => $key), [ { id => 1, v => 'one' } ], 'in_schema, warm');
$qg->expect_rows($qg->get('/q/kept?id=1', key => $key), [ { id => 1, v => 'one' } ], 'kept, warm');
$qg->expect_rows($qg->get('/q/dropped?id=1', key => $key), [ { id => 1, v => 'gone' } ], 'dropped, warm');
$qg->expect_rows($qg->get('/q/other?id=1', key => $key), [ { id => 1, v => 'other 1' } ], 'other, warm');

# New revisions, then unplannable for pc_app.
$qg->sql(q{
	SELECT querygate.save_query('in_schema', 'SELECT id, v FROM pc_s.hidden WHERE id = :id ORDER BY id');
	SELECT querygate.save_query('dropped', 'SELECT id, v FROM pc_gone WHERE id = :id ORDER BY id');
	REVOKE USAGE ON SCHEMA pc_s FROM pc_app;
	DROP TABLE pc_gone;
});

my $log_start = -s $qg->node->logfile;
my %seen;
my $other_ok = 0;
my $rounds = 150;
for my $i (1 .. $rounds)
{
	my $a = $qg->get('/q/in_schema?id=1', key => $key);
	$seen{"in_schema $a->{status} " . ($a->{json}{code} // '')}++;
	my $k = $qg->get('/q/kept?id=1', key => $key);
	$seen{"kept $k->{status} " . ($k->{json}{code} // '')}++;
	my $b = $qg->get('/q/dropped?id=1', key => $key);
	$seen{"dropped $b->{status} " . ($b->{json}{code} // '')}++;
	# A new revision of the other query: its next call prepares a new plan.
	$qg->sql("SELECT querygate.save_query('other', 'SELECT id, v FROM pc_other WHERE id = :id AND $i > 0')")
	  if $i % 3 == 0;
	my $id = 1 + $i % 10;
	my $c = $qg->get("/q/other?id=$id", key => $key);
	$other_ok++ if $c->{status} == 200 && ref $c->{json} eq 'ARRAY' && @{ $c->{json} } == 1
	  && $c->{json}[0]{v} eq "other $id";
}
is_deeply(\%seen, { "in_schema 403 permission_denied" => $rounds, "kept 403 permission_denied" => $rounds,
		"dropped 500 query_failed" => $rounds },
	"$rounds calls of each unplannable query: each answered with its one error")
  or diag(explain \%seen);
is($other_ok, $rounds, "$rounds calls of another query between them: every one answered with its row");
is_deeply($qg->worker_pids, $pids, 'the worker never restarted');
my $log = slurp_file($qg->node->logfile, $log_start);
unlike($log, qr/SPI_ERROR_ARGUMENT|terminated by signal|double free|was terminated/,
	'the server log shows no freed plan and no crash');

# Plannable again: served, with the new revision.
$qg->sql(q{
	GRANT USAGE ON SCHEMA pc_s TO pc_app;
	CREATE TABLE pc_gone (id int PRIMARY KEY, v text);
	INSERT INTO pc_gone VALUES (1, 'back');
	GRANT SELECT ON pc_gone TO pc_app;
});
$qg->expect_rows($qg->get('/q/in_schema?id=1', key => $key), [ { id => 1, v => 'one' } ],
	'in_schema once USAGE is granted again');
$qg->expect_rows($qg->get('/q/kept?id=1', key => $key), [ { v => 'one', id => 1 } ],
	'kept once USAGE is granted again');
$qg->expect_rows($qg->get('/q/dropped?id=1', key => $key), [ { id => 1, v => 'back' } ],
	'dropped once its table exists again');
$qg->expect_rows($qg->get('/q/other?id=2', key => $key), [ { id => 2, v => 'other 2' } ], 'other still');
is_deeply($qg->worker_pids, $pids, 'still the same worker');

# Sets querygate.fault_injection to $fault and returns the first call of query "other" (id $id)
# that fails. The worker reads the setting when its SIGHUP arrives, which may be after a call has
# already made the new plan without the fault, so each try saves a new revision (its own
# $condition and the try's number): every call then makes a fresh plan, and the first one made
# after the reload meets the fault. (The session that saves turns the fault off for itself: the
# analysis at save time has the same fault point.)
sub fault_on_new_plan
{
	my ($fault, $condition, $id) = @_;
	$qg->set_and_reload('querygate.fault_injection', $fault);
	my $try = 0;
	return QuerygateTest::poll_until(sub {
		$try++;
		$qg->sql("SET querygate.fault_injection = ''; SELECT querygate.save_query('other', "
			  . "'SELECT id, v FROM pc_other WHERE id = :id $condition AND $try > 0')");
		my $r = $qg->get("/q/other?id=$id", key => $key);
		return $r->{status} == 500 ? $r : undef;
	});
}

# An exception where the analysis could run out of memory (querygate.fault_injection), with its
# error context callback pushed inside pg::guard: the call is a 500 internal_error, and the worker
# serves the next calls.
my $faulted = fault_on_new_plan('analysis', 'AND 0 < 1', 3);
$qg->expect_error($faulted, 500, 'internal_error', 'a call whose analysis throws');
$qg->sql('ALTER SYSTEM RESET querygate.fault_injection');
$qg->sql('SELECT pg_reload_conf()');
my $served = QuerygateTest::poll_until(sub {
	my $r = $qg->get('/q/other?id=3', key => $key);
	return $r->{status} == 200 ? $r : undef;
});
$qg->expect_rows($served, [ { id => 3, v => 'other 3' } ], 'the next call once the fault is gone');

# The same where the fresh plan and analysis are made but not yet published (plan_cache.cpp: the
# watch lists cannot grow): they are freed, the entry stays as it was, and the next call re-plans.
$faulted = fault_on_new_plan('plan_watch', 'AND 1 < 2', 4);
$qg->expect_error($faulted, 500, 'internal_error', 'a call whose new plan cannot be published');
$qg->sql('ALTER SYSTEM RESET querygate.fault_injection');
$qg->sql('SELECT pg_reload_conf()');
$served = QuerygateTest::poll_until(sub {
	my $r = $qg->get('/q/other?id=4', key => $key);
	return $r->{status} == 200 ? $r : undef;
});
$qg->expect_rows($served, [ { id => 4, v => 'other 4' } ], 'the next call once the fault is gone');
$qg->expect_rows($qg->get('/q/kept?id=1', key => $key), [ { v => 'one', id => 1 } ], 'and the other queries');
$qg->expect_error($qg->get('/q/dropped?id=1', key => $key . 'x'), 401, 'unauthorized',
	'errors after it are reported as usual');
is_deeply($qg->worker_pids, $pids, 'and the worker never restarted');

done_testing();
