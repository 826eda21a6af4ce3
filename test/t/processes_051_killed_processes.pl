# Processes killed on purpose, over real sockets with writes streaming in (test/hostile/
# call_stream.py): a worker ended with pg_terminate_backend starts again at once and serves
# within a second while the other worker and the postmaster go on; a worker killed with SIGKILL
# makes PostgreSQL restart every process (its rule for a process that dies without cleaning
# up), service comes back, and every write answered 200 before the kill is in the table; with
# querygate.group_commit on, the WAL flusher killed the same way loses no write that was
# answered either (an answer waits for its flush).
# Runs alone: it checks that service is back within a second of a kill.
use strict;
use warnings;
use FindBin;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(time sleep);

# The test clusters are made with restart_after_crash off; a server in production has it on.
my $qg = QuerygateTest->start(name => 'killed', workers => 2,
	conf => "querygate.allow_writes = on\nrestart_after_crash = on\n");
my $F = QuerygateTest::timeouts(1);
$qg->sql(q{
	CREATE TABLE kp_t (id int PRIMARY KEY);
	SELECT querygate.save_query('kp_insert', 'INSERT INTO kp_t VALUES (:id::int)');
});
$qg->role('kp_role', select => ['kp_t'], grant => ['INSERT ON kp_t']);
my $key = $qg->access(policy => 'kp_pol', run_as => 'kp_role', queries => ['kp_insert'],
	key => 'kp_key', setup => q{SELECT querygate.grant_writes('kp_pol', '{insert}');});
my $script = "$FindBin::Bin/../hostile/call_stream.py";

sub pid_of
{
	my ($type) = @_;
	return $qg->sql("SELECT pid FROM pg_stat_activity WHERE backend_type = '$type'");
}

# Streams writes for $duration seconds, calls $during->() after $after seconds, and returns what
# the stream saw.
sub stream_writes
{
	my (%o) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'python3', $script, '--port', $qg->port, '--key', $key,
			'--path', '/q/kp_insert', '--threads', 4, '--duration', $o{duration} ],
		'>', \$out, '2>', \$err);
	sleep $o{after};
	$o{during}->();
	$h->finish or die "call_stream.py failed: $err";
	my $r = decode_json($out);
	note('stream: ' . scalar(@{ $r->{answered} }) . " answered, $r->{failed} without an answer, "
		  . "$r->{answered_after_failure} answered after the first failure, other statuses "
		  . encode_json($r->{statuses}));
	return $r;
}

# The ids answered 200 that the table does not have.
sub lost
{
	my ($r) = @_;
	my %have = map { $_ => 1 } split /\n/, $qg->sql('SELECT id FROM kp_t');
	return [ grep { !$have{$_} } @{ $r->{answered} } ];
}

# ---- pg_terminate_backend of a worker
my $pm_start = $qg->sql('SELECT pg_postmaster_start_time()');
my ($victim, $other) = @{ $qg->worker_pids };
my $t0 = time();
$qg->sql("SELECT pg_terminate_backend($victim)");
my $new;
ok(QuerygateTest::poll_until(sub {
			QuerygateTest::fresh_request($qg, 'GET', '/health');
			$new = $qg->sql(q{SELECT pid FROM querygate.stat_workers WHERE requests > 0 AND pid <> } . $other);
			$new ne '' && $new != $victim }, 10 * $F),
	'the terminated worker is started again and serves');
my $took = time() - $t0;
cmp_ok($took, '<', 1 * $F + 0.5, "within a second (${took}s, counting the test's own polling)");
is(join(',', sort @{ $qg->worker_pids }), join(',', sort($new, $other)), 'the other worker is the same process');
is($qg->sql('SELECT pg_postmaster_start_time()'), $pm_start, 'and nothing else restarted');

# ---- SIGKILL of a worker while writes stream in
my $r = stream_writes(duration => 6 * $F, after => 1.5 * $F, during => sub {
		kill 'KILL', $qg->worker_pids->[0];
	});
cmp_ok(scalar(@{ $r->{answered} }), '>', 0, 'writes were answered 200');
cmp_ok($r->{failed}, '>', 0, 'the kill cut some calls off');
cmp_ok($r->{answered_after_failure}, '>', 0, 'PostgreSQL restarted everything and writes were answered again');
is_deeply(lost($r), [], 'every write answered 200 is in the table');
like(slurp_file($qg->node->logfile), qr/terminated by signal 9/, 'the server log says the worker was killed');

# ---- group commit on: SIGKILL of the WAL flusher while writes stream in
$qg->set_and_reload('querygate.group_commit', 'on');
ok($qg->wait_health, 'querygate answers');
ok(QuerygateTest::poll_until(sub { pid_of('querygate wal flusher') ne '' }), 'the WAL flusher runs');
$qg->sql('TRUNCATE kp_t');
$r = stream_writes(duration => 6 * $F, after => 1.5 * $F, during => sub {
		kill 'KILL', pid_of('querygate wal flusher');
	});
cmp_ok(scalar(@{ $r->{answered} }), '>', 0, 'with group commit, writes were answered 200');
cmp_ok($r->{answered_after_failure}, '>', 0, 'after the flusher was killed, writes were answered again');
is_deeply(lost($r), [], 'every write answered 200 is in the table: none was answered before its flush');

done_testing();
