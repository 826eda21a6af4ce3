# Group commit (querygate.group_commit, src/worker/group_commit.hpp): the writes of one worker round share
# one WAL flush, made by the WAL flusher process or, without it, by the worker (counted in pg_stat_wal, which also shows that the workers report their statistics),
# and every write answered 200 survives an immediate (crash) stop right after its answer. The WAL
# writer is slowed to one round every 10 s, so the flushes counted are the writers' own (fsync is
# on here, unlike in the other suites, so that flushes are counted at all; the run history is off, so
# that the writer process flushes nothing). A crash discards the
# cumulative statistics, so the update counts start again from 0 after each.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'group_commit', workers => 1,
	conf => "querygate.allow_writes = on\nquerygate.group_commit = on\nwal_writer_delay = '10s'\nquerygate.history = off\n"
	  . "querygate.statement_timeout = '30s'\nfsync = on\n"
	  # The worker runs its reads: a slow one holds it while the writes queue (slow reads in
	  # helpers: limits_073_slow_calls.pl).
	  . "querygate.slow_call_threshold = 0\n");
my $node = $qg->node;
$qg->sql(q{
	CREATE ROLE gc_writer NOLOGIN;
	CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO counters SELECT g, 0 FROM generate_series(1, 10) g;
	GRANT SELECT, UPDATE ON counters TO gc_writer;
	SELECT querygate.save_query('bump', 'UPDATE counters SET n = n + :d WHERE id = :id');
	SELECT querygate.save_query('count', 'SELECT n FROM counters WHERE id = :id');
	SELECT querygate.save_query('sleep', 'SELECT pg_sleep(:s::float8)::text AS slept');
});
my $key = $qg->access(policy => 'writer', run_as => 'gc_writer', queries => [qw(bump count sleep)],
	setup => q{SELECT querygate.grant_writes('writer', '{update}');});
is($qg->sql('SHOW querygate.group_commit'), 'on', 'group commit is on');

sub post_bump
{
	my ($sock, $id, $d) = @_;
	my $body = qq({"params":{"id":$id,"d":$d}});
	syswrite($sock, "POST /q/bump HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n"
		  . "Content-Type: application/json\r\nContent-Length: " . length($body) . "\r\n\r\n$body");
}

# Ten writes made ready together: the worker is kept busy with a 1 s call while each of ten open
# connections sends one, so its next round finds all ten (one of them from a client that hangs up
# before its answer). $d is added to every counter.
sub ten_writes_in_one_round
{
	my ($d) = @_;
	my @conns = map { $qg->connect_raw } 1 .. 10;
	for my $c (@conns)
	{
		syswrite($c, "GET /health HTTP/1.1\r\nHost: test\r\n\r\n");
		read_response($c, 10);    # accepted and idle before the worker gets busy
	}
	my $busy = $qg->connect_raw;
	syswrite($busy, "GET /q/sleep?s=1 HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n\r\n");
	usleep(200_000);
	post_bump($conns[$_ - 1], $_, $d) for 1 .. 10;
	close $conns[9];    # this client leaves; its write still counts
	my @answers = map { join(' ', read_response($conns[$_], 15)) } 0 .. 8;
	my ($code) = read_response($busy, 15);
	close $_ for @conns[0 .. 8], $busy;
	return ($code, @answers);
}

# WAL syncs so far, once the worker has reported the statistics of $updates row updates in all.
sub wal_syncs_after
{
	my ($updates) = @_;
	poll_until(sub {
		$qg->sql(q{SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'counters'}) >= $updates;
	}) or diag('the worker did not report its statistics');
	return $qg->sql('SELECT wal_sync FROM pg_stat_wal');
}

my $syncs = $qg->sql('SELECT wal_sync FROM pg_stat_wal');
my ($slept, @answers) = ten_writes_in_one_round(1);
is($slept, '200', 'the long call answered');
is_deeply(\@answers, [ ('200 {"rows_affected":1}') x 9 ], 'nine writes answered, each {"rows_affected":1}');
my $used = wal_syncs_after(10) - $syncs;
cmp_ok($used, '<=', 3, "ten writes in one round took $used WAL syncs, not ten");

# A crash right after the answers: each answered write must be on disk already.
$node->stop('immediate');
$node->start;
ok($qg->wait_health, 'the server is back after the crash');
is($qg->sql('SELECT string_agg(n::text, \',\' ORDER BY id) FROM counters'), join(',', (1) x 10),
	'after a crash, every write survives (nine answered, and the one whose client left)');

# Reads on the same worker after writes: correct values, and the worker survives.
my $c = $qg->connect_raw;
post_bump($c, 3, 5);
syswrite($c, "GET /q/count?id=3 HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n\r\n");
is(join(' ', read_response($c, 10)), '200 {"rows_affected":1}', 'a pipelined write answers');
is(join(' ', read_response($c, 10)), '200 [{"n":6}]', 'the pipelined read after it sees the write');
close $c;

# The WAL flusher (src/worker/wal_flusher.hpp) does the syncs. Without it (terminated; it comes back after
# a second), a worker flushes its writes itself: the answers and their durability are the same.
my $flusher = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'querygate wal flusher'};
like($qg->sql($flusher), qr/^\d+$/, 'one WAL flusher runs');
$qg->sql("SELECT pg_terminate_backend(($flusher))");
ok(poll_until(sub { $qg->sql("SELECT count(*) FROM ($flusher) f") eq '0' }), 'the flusher is gone');
my $idle = $qg->connect_raw;    # a second connection on the worker, so that its writes defer
syswrite($idle, "GET /health HTTP/1.1\r\nHost: test\r\n\r\n");
read_response($idle, 10);
$c = $qg->connect_raw;
post_bump($c, 4, 7) for 1 .. 2;
is(join(' ', read_response($c, 10), read_response($c, 10)), '200 {"rows_affected":1} 200 {"rows_affected":1}',
	'without the flusher, pipelined writes are answered');
close $_ for $c, $idle;
ok(poll_until(sub { $qg->sql($flusher) =~ /^\d+$/ }), 'the flusher is started again');
$node->stop('immediate');
$node->start;
ok($qg->wait_health, 'the server is back after the third crash');
is($qg->sql('SELECT n FROM counters WHERE id = 4'), '15', 'writes flushed by the worker itself survive a crash');

# Off (reload), and no write helpers (which would let writes that wait together share flushes,
# test/t/processes_041_write_helpers.pl): the worker commits each write as PostgreSQL would, one flush each;
# answers are the same.
$qg->set_and_reload('querygate.helpers', '0');
$qg->set_and_reload('querygate.group_commit', 'off');
$syncs = $qg->sql('SELECT wal_sync FROM pg_stat_wal');    # no write since the crash
($slept, @answers) = ten_writes_in_one_round(2);
is_deeply(\@answers, [ ('200 {"rows_affected":1}') x 9 ], 'with group commit off, the same answers');
$used = wal_syncs_after(10) - $syncs;
cmp_ok($used, '>=', 8, "with group commit off, ten writes took $used WAL syncs (one each)");
$node->stop('immediate');
$node->start;
ok($qg->wait_health, 'the server is back after the last crash');
is($qg->sql('SELECT string_agg(n::text, \',\' ORDER BY id) FROM counters'),
	join(',', 3, 3, 8, 17, (3) x 6), 'with group commit off, every write survives a crash too');

done_testing();
