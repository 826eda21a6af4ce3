# Every process querygate starts absorbs PostgreSQL's ProcSignalBarriers: DROP DATABASE (and DROP
# TABLESPACE) wait until every process of the cluster has, so one process that never does blocks
# them forever. The WAL flusher did not; with the library preloaded, DROP DATABASE hung. Also:
# pg_log_backend_memory_contexts reaches the flusher and the workers.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'signal_barriers', workers => 2,
	conf => "querygate.group_commit = on\n");
my $node = $qg->node;
my $flusher = $qg->sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'querygate wal flusher'});
is($flusher, 1, 'the WAL flusher runs');

for my $round (1 .. 2)
{
	$qg->sql("CREATE DATABASE qg_dropme_$round");
	my $t0 = time();
	my ($rc, $out, $err) = $node->psql('postgres', "DROP DATABASE qg_dropme_$round", timeout => 60);
	is($rc, 0, "DROP DATABASE, round $round: done") or diag($err);
	cmp_ok(time() - $t0, '<', 30, "DROP DATABASE, round $round: without waiting for a querygate process");
}

my $log_start = -s $node->logfile;
$qg->sql(q{SELECT pg_log_backend_memory_contexts(pid) FROM pg_stat_activity
           WHERE backend_type IN ('querygate wal flusher', 'querygate http worker')});
my $logged = QuerygateTest::poll_until(sub {
	my $log = slurp_file($node->logfile, $log_start);
	my $n = () = $log =~ /logging memory contexts of PID/g;
	return $n >= 3 ? $n : undef;
});
is($logged, 3, 'the flusher and both workers log their memory contexts when asked');
is($qg->get('/health')->{status}, 200, 'and HTTP is served');

done_testing();
