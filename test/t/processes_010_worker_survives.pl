# After each kind of error the worker still serves, is the same process, and the postmaster never
# restarted: timeout, query error, bad parameters, malformed body, oversized body, garbage on the
# socket, truncated requests, a client that disconnects in the middle of a query.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use QuerygateTest;

# The worker runs its reads (querygate.slow_call_threshold = 0): a slow one holds it, which is
# what this test needs; slow reads in helpers: limits_073_slow_calls.pl.
my $qg = QuerygateTest->start(name => 'survive', workers => 1,
	conf => "querygate.statement_timeout = '300ms'\nquerygate.max_body_size = '4kB'\n"
	  . "querygate.slow_call_threshold = 0\n");
my $node = $qg->node;
$qg->sql(q{
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int);
	INSERT INTO accounts SELECT g, 1, 0 FROM generate_series(1, 10) AS g;
	SELECT querygate.save_query('account', 'SELECT aid, bid, abalance FROM accounts WHERE aid = :aid');
	SELECT querygate.save_query('sleep', 'SELECT pg_sleep(:s::float8)::text AS slept');
	SELECT querygate.save_query('divide', 'SELECT 1 / :d::int AS q');
	SELECT querygate.save_query('echo', 'SELECT :s::text AS s');
	SELECT querygate.save_query('pid', 'SELECT pg_backend_pid() AS pid');
	SELECT querygate.save_query('huge', 'SELECT repeat(''x'', 1000) AS s FROM generate_series(1, 1000)');
	SELECT querygate.save_query('stack', 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) AS n FROM r');
	SELECT querygate.save_query('mem', 'SELECT array_agg(g) AS a FROM generate_series(1, :n::int) g');
	SELECT querygate.save_query('sleepbig', 'SELECT pg_sleep(:s::float8)::text AS slept, repeat(''x'', 30000000) AS big');
});
my $key = $qg->access(run_as => $qg->role('api_reader', select => ['accounts']),
	queries => [qw(account sleep divide echo pid huge stack mem sleepbig)]);

my @pids = @{ $qg->worker_pids };
is(scalar @pids, 1, 'one worker');
my $worker = $pids[0] // 0;
my $current = $worker;
my $pm_start = $qg->sql('SELECT pg_postmaster_start_time()');
my $log_offset = -s $node->logfile;

my $n = 0;
sub still_serves
{
	my ($after) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $aid = ++$n % 10 + 1;
	# A fresh connection each time: the error may have closed the previous one.
	my $res = $qg->get("/q/account?aid=$aid", key => $key, client => $qg->new_client(keep_alive => 0));
	is($res->{status} . ' ' . ($res->{content} // ''), qq(200 [{"aid":$aid,"bid":1,"abalance":0}]),
		"after $after: the next request is served");
	$res = $qg->get('/q/pid', key => $key, client => $qg->new_client(keep_alive => 0));
	my $pid = ($res->{json} // [ {} ])->[0]{pid} // 'none';
	is($pid, $current, "after $after: by the same worker process (it did not exit)");
	$current = $pid;    # a failure is reported once, at the step that caused it
}

still_serves('start');

my $res = $qg->get('/q/sleep?s=3', key => $key);
is($res->{status}, 504, 'timeout: 504') or diag(QuerygateTest::describe($res));
still_serves('a timeout');

$res = $qg->get('/q/divide?d=0', key => $key);
is($res->{status}, 500, 'division by zero: 500') or diag(QuerygateTest::describe($res));
still_serves('a query error');

# An endless recursive CTE keeps one row in its work table and counts: it neither runs out of
# memory nor reaches the integer's limit (2^31 steps) within the 300ms it is given.
$res = $qg->get('/q/stack', key => $key);
$qg->expect_error($res, 504, 'query_timeout', 'an endless recursive CTE');
still_serves('an endless query');

$res = $qg->get('/q/account?aid=x%00y&zzz=1', key => $key);
$qg->expect_error($res, 400, 'param_invalid', 'bad parameters', param => 'zzz');
still_serves('bad parameters');

$res = $qg->request('POST', '/q/account', key => $key, content => '{"params": {"aid": [');
$qg->expect_error($res, 400, 'invalid_body', 'malformed body');
still_serves('a malformed body');

# The worker reads the whole body, keeping none of it past 4kB, and then answers.
$res = $qg->request('POST', '/q/echo', key => $key, content => json_encode({ params => { s => 'x' x 100_000 } }));
$qg->expect_error($res, 413, 'payload_too_large', 'oversized body');
still_serves('an oversized body');

$res = $qg->get('/q/huge?page_size=1000', key => $key);
is($res->{status}, 200, 'a 1 MB response is served') or diag(substr(QuerygateTest::describe($res), 0, 300));
is(scalar @{ $res->{json} // [] }, 1000, 'with its 1000 rows');
still_serves('a large response');

# A call that ends close to the timeout: whether it is answered depends on the time it took, the
# one thing a test cannot fix. Either outcome is complete: all the rows, or the 504 of a timeout
# (never another error, never a partial answer, never a dead worker).
sub complete_or_timeout
{
	my ($res, $complete, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $code = ref $res->{json} eq 'HASH' ? ($res->{json}{code} // '') : '';
	ok(($res->{status} == 200 && $complete->($res->{json}))
		  || ($res->{status} == 504 && $code eq 'query_timeout'),
		"$name: 200 with the whole answer, or 504 query_timeout past the timeout")
	  or diag(substr(QuerygateTest::describe($res), 0, 300));
}

# Arrays of 0.6 to 1.5 million elements: around the 300ms timeout, which then fires at every phase of
# the call (execution, output functions, JSON, commit).
for my $k (0 .. 18)
{
	my $elements = 600_000 + 50_000 * $k;
	$res = $qg->get("/q/mem?n=$elements", key => $key, client => $qg->new_client(keep_alive => 0));
	# int[] comes back as its text: {1,2,...,n}.
	complete_or_timeout($res, sub { ref $_[0] eq 'ARRAY' && @{ $_[0] } == 1 && ($_[0][0]{a} // '') eq '{' . join(',', 1 .. $elements) . '}' },
		"an array of $elements elements");
	still_serves("an array of $elements elements");
}

# The timeout (300ms) firing after the query ran, while its 30 MB result is being turned into JSON.
for my $s (qw(0.20 0.24 0.27 0.29))
{
	$res = $qg->get("/q/sleepbig?s=$s", key => $key, client => $qg->new_client(keep_alive => 0));
	complete_or_timeout($res, sub { ref $_[0] eq 'ARRAY' && @{ $_[0] } == 1 && length($_[0][0]{big} // '') == 30_000_000 },
		"sleep $s s then a 30 MB value");
	still_serves("sleep $s s then a 30 MB value");
}

# --- raw socket abuse
my @raw = (
	[ 'garbage line', "GARBAGE\r\n\r\n" ],
	[ 'binary noise', join('', map { chr(($_ * 37 + 11) % 256) } 1 .. 2000) . "\r\n\r\n" ],
	[ 'truncated request line', 'GET /q/acc' ],
	[ 'truncated headers', "GET /q/account?aid=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key" ],
	[ 'body shorter than Content-Length', "POST /q/account HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"params\":" ],
	[ 'negative Content-Length', "POST /q/account HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n" ],
	[ 'huge Content-Length', "POST /q/account HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\nContent-Length: 99999999999999999999\r\n\r\n" ],
	[ 'bad chunked encoding', "POST /q/account HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nxx\r\n" ],
	[ 'HTTP/0.9 request', "GET /health\r\n\r\n" ],
	[ 'header without colon', "GET /health HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n" ],
	[ 'NUL in the request line', "GET /q/acc\0ount HTTP/1.1\r\nHost: x\r\n\r\n" ],
	[ 'very long header', "GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " . ('a' x 100_000) . "\r\n\r\n" ],
	[ 'very long URL', 'GET /q/' . ('a' x 100_000) . " HTTP/1.1\r\nHost: x\r\n\r\n" ],
	[ 'pipelined requests', "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n" ]);
for my $r (@raw)
{
	my ($name, $bytes) = @$r;
	my $got = eval { $qg->raw_exchange($bytes, timeout => 3, shutdown_write => 1) };
	note "$name: " . (defined $got ? substr($got, 0, 80) =~ s/[\r\n]+/ | /gr : "error $@");
	still_serves($name);
}
my $got = $qg->raw_exchange("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", timeout => 5);
my @statuses = ($got =~ m{HTTP/1\.1 (\d{3}) }g);
is("@statuses", '200 200', 'two pipelined GET /health on one connection: two 200 responses');

# Connections opened and dropped without a byte, and a client leaving in the middle of a query.
$qg->raw_exchange('', close_after => 1) for 1 .. 20;
still_serves('20 empty connections');
$qg->raw_exchange("GET /q/sleep?s=0.2 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", close_after => 1);
still_serves('a client that left during its query');
my @idle = map { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $qg->port, Proto => 'tcp') } 1 .. 20;
still_serves('20 idle open connections');
close $_ for grep { defined } @idle;

# --- nothing restarted
is_deeply($qg->worker_pids, [$worker], 'the worker is the same process as at the start');
is($qg->sql('SELECT pg_postmaster_start_time()'), $pm_start, 'the postmaster did not restart');
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/terminated by signal/, 'the server log has no "terminated by signal"');
unlike($log, qr/exited with exit code [1-9]/, 'no process exited with an error code');
unlike($log, qr/PANIC|server process .* was terminated|all server processes terminated/, 'no PANIC, no crash recovery');
is($qg->sql('SELECT count(*), sum(abalance) FROM accounts'), '10|0', 'accounts unchanged');

done_testing();
