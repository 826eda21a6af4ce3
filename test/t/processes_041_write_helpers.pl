# Write helpers (src/worker/call_helpers.hpp): a write runs in a helper process, so a write that
# waits (here for a row lock a SQL session holds, as it would for its WAL flush) holds no worker.
# One worker, so that without helpers it would serve nobody else meanwhile (shown with
# querygate.helpers = 0). Also: with every helper busy and no room for another
# (max_worker_processes = 6: the worker, the WAL flusher, the writer and the logical replication launcher leave
# two slots, the worker's share), a write waits for a free helper while the worker serves on; a helper terminated during
# a call has the call cancelled, answered 503 shutting_down, and the worker goes on; with no slot at all, the worker runs
# writes itself. Last, querygate raises max_worker_processes when the administrator left it unset.
# One key makes every call: querygate.caller_share = 100 lets it hold both helpers (shares:
# test/t/limits_073_slow_calls.pl).
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $statement_ms = timeouts(60) * 1000;
my $qg = QuerygateTest->start(name => 'write_helpers', workers => 1,
	conf => "querygate.allow_writes = on\nmax_worker_processes = 6\nquerygate.caller_share = 100\n"
	  . "querygate.statement_timeout = $statement_ms\n");
$qg->sql(q{
	CREATE ROLE wh_writer NOLOGIN;
	CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO counters SELECT g, 0 FROM generate_series(1, 5) g;
	GRANT SELECT, UPDATE ON counters TO wh_writer;
	SELECT querygate.save_query('bump', 'UPDATE counters SET n = n + 1 WHERE id = :id');
	SELECT querygate.save_query('count', 'SELECT n FROM counters WHERE id = :id');
});
my $key = $qg->access(policy => 'writer', run_as => 'wh_writer', queries => [qw(bump count)],
	setup => q{SELECT querygate.grant_writes('writer', '{update}');});

sub send_bump
{
	my ($sock, $id) = @_;
	my $body = qq({"params":{"id":$id}});
	syswrite($sock, "POST /q/bump HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n"
		  . "Content-Type: application/json\r\nContent-Length: " . length($body) . "\r\n\r\n$body");
}

sub send_count
{
	my ($sock, $id) = @_;
	syswrite($sock, "GET /q/count?id=$id HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n\r\n");
}

sub answer { my ($sock, $timeout) = @_; return join(' ', read_response($sock, $timeout)); }
sub counter { return $qg->sql("SELECT n FROM counters WHERE id = $_[0]"); }
sub helpers
{
	my ($where) = @_;
	return $qg->sql(q{SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'querygate helper'} . ($where // ''));
}

# A SQL session that holds the rows' locks until release().
sub hold_rows
{
	my (@ids) = @_;
	my ($in, $out) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1',
			'-d', $qg->node->connstr('postgres') ], '<', \$in, '>', \$out, '2>', \$out);
	$in .= 'BEGIN; SELECT id FROM counters WHERE id IN (' . join(',', @ids)
	  . ") FOR UPDATE; SELECT 'locked';\n";
	my $locked = QuerygateTest::poll_until(sub { $h->pump_nb; $out =~ /locked/ });
	die "the lock session did not lock: $out" unless $locked;
	return { h => $h, in => \$in };
}

sub release
{
	my ($lock) = @_;
	${ $lock->{in} } .= "COMMIT;\n\\q\n";
	$lock->{h}->finish;
}

# Waits until n helpers wait for a lock: their writes have reached the locked rows.
sub blocked_helpers
{
	my ($n) = @_;
	return QuerygateTest::poll_until(
		sub { helpers(q{ AND wait_event_type = 'Lock'}) == $n });
}

my $worker = $qg->worker_pids->[0];

# ---- a write through a helper
my $a = $qg->connect_raw;
send_bump($a, 1);
is(answer($a, timeouts(10)), '200 {"rows_affected":1}', 'a write answers');
is(counter(1), 1, 'and wrote');
is(helpers(), 1, 'a write helper ran it');

# ---- a waiting write holds no worker
my $b = $qg->connect_raw;
my $c = $qg->connect_raw;
my $lock = hold_rows(1);
send_bump($a, 1);
ok(blocked_helpers(1), 'the write waits for the row lock, in a helper');
send_count($b, 2);
is(answer($b, timeouts(10)), '200 [{"n":0}]', 'meanwhile the worker answers a read');
send_bump($c, 2);
is(answer($c, timeouts(10)), '200 {"rows_affected":1}', 'and another write, in a second helper');
is(helpers(), 2, 'two helpers run');
is((read_response($a, 0.2))[0], 'none', 'the waiting write has not answered');
release($lock);
is(answer($a, timeouts(10)), '200 {"rows_affected":1}', 'it answers once the lock is released');
is(counter(1), 2, 'and wrote');

# ---- every helper busy and no room for another (the worker's share of the slots left is two): the
# write waits for a helper, the worker serves on
my $d = $qg->connect_raw;
$lock = hold_rows(1, 2);
send_bump($a, 1);
send_bump($c, 2);
ok(blocked_helpers(2), 'both helpers wait for locks');
send_bump($b, 3);
send_count($d, 3);
is(answer($d, timeouts(10)), '200 [{"n":0}]', 'a read is answered meanwhile');
is((read_response($b, 0.2))[0], 'none',
	'a third write, with no room for a third helper, waits for a helper');
is(helpers(), 2, 'still two helpers: the worker\'s share of the slots');
release($lock);
is(answer($a, timeouts(10)), '200 {"rows_affected":1}', 'the first waiting write answers');
is(answer($c, timeouts(10)), '200 {"rows_affected":1}', 'the second too');
is(answer($b, timeouts(10)), '200 {"rows_affected":1}', 'and the third, once a helper was free');
is($qg->sql('SELECT string_agg(n::text, \',\' ORDER BY id) FROM counters'), '3,2,1,0,0',
	'every write wrote once');

# ---- a helper terminated during a call: the call is cancelled and answered (stop_request.hpp)
$lock = hold_rows(4);
send_bump($a, 4);
ok(blocked_helpers(1), 'a write waits in a helper');
my $victim = $qg->sql(q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'querygate helper' AND wait_event_type = 'Lock'});
$qg->sql("SELECT pg_terminate_backend($victim)");
my ($code, $body) = read_response($a, timeouts(10));
is($code, '503', 'its caller gets 503');
is(json_decode($body)->{code}, 'shutting_down', 'with the code shutting_down');
release($lock);
is(counter(4), 0, 'the cancelled call wrote nothing');
ok(QuerygateTest::poll_until(sub { $qg->sql("SELECT count(*) FROM pg_stat_activity WHERE pid = $victim") == 0 }),
	'and the helper has exited');
send_bump($a, 4);
is(answer($a, timeouts(10)), '200 {"rows_affected":1}', 'the next write answers');
is(counter(4), 1, 'and wrote');
is($qg->worker_pids->[0], $worker, 'the worker never restarted');

# ---- querygate.helpers = 0: the worker runs writes, and serves nobody while one waits
$qg->set_and_reload('querygate.helpers', '0');
sleep timeouts(1); # the reload reaches the worker asynchronously; nothing observable says when
$lock = hold_rows(5);
send_bump($a, 5);
ok(QuerygateTest::poll_until(sub { $qg->sql(q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'querygate http worker' AND wait_event_type = 'Lock'}) == 1 }),
	'the worker itself waits for the lock');
send_count($b, 2);
is((read_response($b, 1))[0], 'none', 'without helpers, a read waits while the worker waits for the lock');
release($lock);
is(answer($a, timeouts(10)), '200 {"rows_affected":1}', 'the write answers once released');
is(answer($b, timeouts(10)), '200 [{"n":2}]', 'then the read');

close $_ for $a, $b, $c, $d;
# ---- no slot at all (the worker, the WAL flusher, the writer and the launcher take all four): the worker runs
# writes itself
my $bare = QuerygateTest->start(name => 'no_slot', workers => 1,
	conf => "querygate.allow_writes = on\nmax_worker_processes = 4\n");
$bare->sql(q{
	CREATE ROLE wh_writer NOLOGIN;
	CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO counters VALUES (1, 0);
	GRANT SELECT, UPDATE ON counters TO wh_writer;
	SELECT querygate.save_query('bump', 'UPDATE counters SET n = n + 1 WHERE id = :id');
});
my $bare_key = $bare->access(policy => 'writer', run_as => 'wh_writer', queries => ['bump'],
	setup => q{SELECT querygate.grant_writes('writer', '{update}');});
for my $i (1 .. 3)
{
	my $res = $bare->post('/q/bump', { params => { id => 1 } }, key => $bare_key);
	is("$res->{status} $res->{content}", '200 {"rows_affected":1}', "write $i answers without a helper");
}
is($bare->sql('SELECT n FROM counters WHERE id = 1'), '3', 'and wrote');
is($bare->sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'querygate helper'}),
	'0', 'no helper runs');
like(slurp_file($bare->node->logfile), qr/no background worker slot is free for a helper/,
	'the server log says why');
is($bare->sql('SHOW max_worker_processes'), '4', 'max_worker_processes set by the administrator is kept');

# ---- max_worker_processes left at its default: querygate adds the slots of its workers, their
# helpers, the WAL flusher and the writer to PostgreSQL's 8 (src/worker/worker_slots.hpp)
my $roomy = QuerygateTest->start(name => 'default_slots', workers => 2,
	conf => "querygate.helpers = 3
");
is($roomy->sql('SHOW max_worker_processes'), 8 + 2 * (1 + 3) + 2,
	'an unset max_worker_processes is raised by querygate\'s processes');
is($roomy->sql(q{SELECT source FROM pg_settings WHERE name = 'max_worker_processes'}), 'default',
	'as a default, which any setting of the administrator outranks');
like(slurp_file($roomy->node->logfile),
	qr/querygate raised max_worker_processes from 8 to 18 for its 2 workers/, 'and the log says so');

done_testing();
