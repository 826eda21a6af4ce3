# Run history records lost with a restart that is not a clean stop are counted
# (src/shmem/history_ring.cpp, src/call/surviving_memory.hpp): the rings' positions live in a file
# mapped into the server's processes (pg_stat_tmp/querygate_history_positions, mode 0600), so that
# after a worker killed with SIGKILL (PostgreSQL restarts every process) or an immediate stop, the
# postmaster says how many records the rings held: a WARNING in the log, lost_at_restart in
# querygate.stat_history and querygate_history_lost_at_restart in /metrics. A clean stop loses
# nothing and says so; the writer terminated alone (its rings kept) loses nothing either.
# The records are kept in the ring by a writer that waits a minute between passes.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $token = 'history-lost-metrics-token';
# restart_after_crash: the test clusters are made with it off; a server in production has it on.
my $qg = QuerygateTest->start(name => 'history_lost', workers => 1, metrics_token => $token,
	conf => "querygate.history_buffer = 1000\nrestart_after_crash = on\n");
$qg->sql(q{
	CREATE TABLE hl_items (id int PRIMARY KEY, label text NOT NULL);
	INSERT INTO hl_items SELECT g, 'item ' || g FROM generate_series(1, 10) g;
	SELECT querygate.save_query('hl_item', 'SELECT id, label FROM hl_items WHERE id = :id');
});
$qg->role('hl_reader', select => ['hl_items']);
my $key = $qg->access(policy => 'hl_pol', run_as => 'hl_reader', queries => ['hl_item']);

sub stats
{
	my ($buffered, $written, $lost) = split /\|/,
	  $qg->sql(q{SELECT concat_ws('|', buffered, written, lost_at_restart) FROM querygate.stat_history});
	return { buffered => $buffered, written => $written, lost => $lost };
}

# Stats once the server answers SQL and HTTP again after a restart.
sub stats_after_restart
{
	QuerygateTest::poll_until(sub { eval { $qg->sql('SELECT 1') } }, QuerygateTest::timeouts(60));
	$qg->wait_health;
	return stats();
}

sub calls
{
	my ($n) = @_;
	my $answered = 0;
	for my $i (1 .. $n)
	{
		$answered++ if $qg->get('/q/hl_item?id=' . (1 + $i % 10), key => $key)->{status} == 200;
	}
	return $answered;
}

# $n calls left in the ring: the writer waits a minute between passes, and $n is under half the
# ring (which would wake it).
sub hold
{
	my ($n) = @_;
	$qg->set_and_reload('querygate.history_flush_interval', '60s');
	sleep 2; # the wait already running ends at the old interval
	my $before = stats()->{buffered};
	is(calls($n), $n, "$n calls answered");
	ok(QuerygateTest::poll_until(sub { stats()->{buffered} == $before + $n }),
		"the ring holds their $n records");
}

sub lost_metric
{
	my $m = $qg->get('/metrics', bearer => $token);
	my ($v) = ($m->{content} // '') =~ /^querygate_history_lost_at_restart (\d+)$/m;
	return $v;
}

my $file = $qg->node->data_dir . '/pg_stat_tmp/querygate_history_positions';
ok(-f $file, 'the positions file is there');
is(sprintf('%04o', (stat $file)[2] & 07777), '0600', 'and only the server\'s user may read it');
is(stats()->{lost}, 0, 'a first start lost nothing');

# ---- a worker killed with SIGKILL: PostgreSQL restarts every process
hold(30);
my $log_start = -s $qg->node->logfile;
kill 'KILL', $qg->worker_pids->[0];
ok(QuerygateTest::poll_until(sub { my $s = eval { stats() }; $s && $s->{lost} == 30 }, QuerygateTest::timeouts(60)),
	'after the crash restart, stat_history says the 30 records the ring held were lost');
my $s = stats_after_restart();
is($s->{buffered}, 0, 'the new rings are empty');
is(lost_metric(), 30, '/metrics says the same');
like(slurp_file($qg->node->logfile, $log_start),
	qr/WARNING:  querygate: 30 run history records were lost: the rings held them when the server stopped without a clean stop/,
	'the log says how many, once the server restarts');

# ---- a clean stop: the writer saves what the rings hold
$qg->set_and_reload('querygate.history_flush_interval', '60s');
sleep 2;
my $rows = $qg->sql(q{SELECT count(*) FROM querygate.history});
is(calls(5), 5, 'five calls answered');
$log_start = -s $qg->node->logfile;
$qg->node->restart; # fast mode: a clean stop
$s = stats_after_restart();
is($s->{lost}, 0, 'a clean stop lost nothing');
is($qg->sql(q{SELECT count(*) FROM querygate.history}), $rows + 5, 'the five records were saved by the stop');
unlike(slurp_file($qg->node->logfile, $log_start), qr/run history records were lost/, 'and the log says nothing of a loss');

# ---- an immediate stop
hold(7);
$qg->node->stop('immediate');
$qg->node->start;
$s = stats_after_restart();
is($s->{lost}, 7, 'an immediate stop: the 7 records the ring held are counted as lost');

# ---- the writer terminated alone: the rings stay, and nothing is lost
hold(4);
my $pm_start = $qg->sql('SELECT pg_postmaster_start_time()');
my $written = stats()->{written};
$qg->sql(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'querygate writer'});
$qg->sql(q{ALTER SYSTEM RESET querygate.history_flush_interval; SELECT pg_reload_conf()});
ok(QuerygateTest::poll_until(sub { stats()->{written} >= $written + 4 }, QuerygateTest::timeouts(30)),
	'the writer, started again, saves the 4 records');
is(stats()->{lost}, 7, 'lost_at_restart still counts the last restart only');
is($qg->sql('SELECT pg_postmaster_start_time()'), $pm_start, 'and nothing else restarted');

done_testing();
