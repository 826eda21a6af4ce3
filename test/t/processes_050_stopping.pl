# The server stopping (src/call/stop_request.hpp, src/worker/http_worker.cpp), in both of
# pg_ctl's modes that let processes finish, smart and fast, on one worker with write helpers:
# the read the worker runs and the write a helper runs are cancelled and answered 503
# shutting_down with Retry-After and Connection: close, a request that had arrived meanwhile on
# a connection the worker had is answered the same way, an idle keep-alive connection is closed with nothing sent, the server
# stops in seconds (not after the calls' 30 s), the cancelled write left nothing, no process
# ended with a signal, and after a start the same calls are served.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(time sleep);

# The worker runs its reads (querygate.slow_call_threshold = 0): the read it is busy with is what
# keeps the late request waiting; a call a helper runs is the write's case.
my $qg = QuerygateTest->start(name => 'stopping', workers => 1,
	conf => "querygate.allow_writes = on\nquerygate.statement_timeout = '60s'\n"
	  . "querygate.slow_call_threshold = 0\n");
my $F = QuerygateTest::timeouts(1);
$qg->sql(q{
	CREATE TABLE st_t (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO st_t VALUES (1, 0);
	SELECT querygate.save_query('st_slow', 'SELECT pg_sleep(:s::float8) IS NULL AS slept');
	SELECT querygate.save_query('st_write', 'UPDATE st_t SET n = n + 1 WHERE id = 1 RETURNING n, pg_sleep(:s::float8) IS NULL AS slept');
	SELECT querygate.save_query('st_fast', 'SELECT 1 AS one');
});
$qg->role('st_role', select => ['st_t'], grant => ['UPDATE ON st_t']);
my $key = $qg->access(policy => 'st_pol', run_as => 'st_role', queries => [qw(st_slow st_write st_fast)],
	key => 'st_key', setup => q{SELECT querygate.grant_writes('st_pol', '{update}');});

sub send_call
{
	my ($path) = @_;
	my $sock = $qg->connect_raw;
	# POST: a write is never a GET's (and a read may be either).
	print $sock "POST $path HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\nContent-Length: 0\r\n\r\n";
	return $sock;
}

sub sleeping
{
	return $qg->sql(q{SELECT count(*) FROM pg_stat_activity
		WHERE query LIKE '%pg_sleep%' AND state = 'active' AND pid <> pg_backend_pid()});
}

# Checks one answer of a call cut short by the stop.
sub stopped_answer
{
	my ($sock, $what) = @_;
	my ($status, $body, $head) = QuerygateTest::read_response_with_head($sock, 10 * $F);
	is($status, '503', "$what: 503");
	is(eval { QuerygateTest::json_decode($body)->{code} } // '', 'shutting_down', "$what: shutting_down");
	like($head // '', qr/^Retry-After: 1\r$/mi, "$what: with Retry-After");
	like($head // '', qr/^Connection: close\r$/mi, "$what: and Connection: close");
	is_deeply([ QuerygateTest::wait_close($sock, 5 * $F) ], [ '', 1 ], "$what: then the connection is closed");
}

for my $mode (qw(smart fast))
{
	my $idle = send_call('/q/st_fast');
	is((QuerygateTest::read_response($idle, 10 * $F))[0], '200', "$mode: a call on a keep-alive connection");
	my $late = send_call('/q/st_fast');
	is((QuerygateTest::read_response($late, 10 * $F))[0], '200', "$mode: and on another");
	my $write = send_call('/q/st_write?s=30');
	ok(QuerygateTest::poll_until(sub { sleeping() == 1 }), "$mode: a write runs in a helper");
	my $read = send_call('/q/st_slow?s=30');
	ok(QuerygateTest::poll_until(sub { sleeping() == 2 }), "$mode: and a read in the worker");
	print $late "GET /q/st_fast HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n";
	sleep 0.3; # its next request is in before the stop, while the worker runs the read

	# What pg_ctl stop -m smart / fast sends; pg_ctl itself would wait before the answers are read.
	my ($postmaster) = slurp_file($qg->node->data_dir . '/postmaster.pid') =~ /^(\d+)/;
	my $t0 = time();
	kill($mode eq 'smart' ? 'TERM' : 'INT', $postmaster);
	stopped_answer($read, "$mode: the read the worker ran");
	stopped_answer($write, "$mode: the write a helper ran");
	stopped_answer($late, "$mode: a request that had arrived");
	is_deeply([ QuerygateTest::wait_close($idle, 5 * $F) ], [ '', 1 ],
		"$mode: the idle keep-alive connection is closed with nothing sent");
	my $pidfile = $qg->node->data_dir . '/postmaster.pid'; # removed as the postmaster exits
	ok(QuerygateTest::poll_until(sub { !-e $pidfile }, 20 * $F), "$mode: the server stops");
	my $took = time() - $t0;
	cmp_ok($took, '<', 10 * $F, "$mode: in ${took}s, not after the calls' 30 s");
	$qg->node->stop($mode, fail_ok => 1); # nothing left to stop: the node knows it is down

	$qg->node->start;
	ok($qg->wait_health, "$mode: after a start querygate answers");
	is($qg->sql('SELECT n FROM st_t WHERE id = 1'), '0', "$mode: the cancelled write left nothing");
	my $again = send_call('/q/st_fast');
	my ($status, $body) = QuerygateTest::read_response($again, 10 * $F);
	is("$status $body", '200 [{"one":1}]', "$mode: and calls are served");
	close $again;
}

my $log = slurp_file($qg->node->logfile);
unlike($log, qr/terminated by signal|was terminated/, 'no process ended with a signal');
unlike($log, qr/outcome is unknown/, 'no write helper exited in the middle of a call');

done_testing();
