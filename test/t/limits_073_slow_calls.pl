# Slow calls hold no worker (src/call/worker_budget.hpp, src/call/slow_queries.hpp,
# src/worker/call_helpers.hpp): a read that runs past querygate.slow_call_threshold in the worker is
# stopped and run again by a helper, and its query's next calls go to helpers while they stay slow;
# one caller, and one policy, hold at most querygate.caller_share of a worker's helpers, so another
# caller's lookup is answered at once and its slow call finds a helper; a caller that hangs up frees
# its helper; an export's query runs in a helper, its file sent by the worker.
# Runs alone: it measures answers on the wall clock.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(time sleep);

# One worker: every call but those handed on waits for it. Its helpers: 8, so a share of 6.
my $qg = QuerygateTest->start(name => 'slow_calls', workers => 1,
	conf => "querygate.statement_timeout = '60s'\nmax_worker_processes = 16\n");
my $F = QuerygateTest::timeouts(1);
$qg->sql(q{
	CREATE TABLE sc_t (id int PRIMARY KEY, v text NOT NULL);
	INSERT INTO sc_t SELECT g, 'v' || g FROM generate_series(1, 10) g;
	SELECT querygate.save_query('sc_lookup', 'SELECT v FROM sc_t WHERE id = :id');
	SELECT querygate.save_query('sc_slow',
		'SELECT pg_sleep(:s::float8) IS NULL AS slept, pg_backend_pid() AS pid');
	-- Work that checks for no interrupt (n characters of padding, counted), then an error.
	SELECT querygate.save_query('sc_fails_late', 'SELECT length(lpad('''', :n::int, ''x'')) / :z::int AS r');
});
$qg->role('sc_role', select => ['sc_t']);
my @granted = (run_as => 'sc_role', queries => [qw(sc_lookup sc_slow sc_fails_late)]);
my $a = $qg->access(policy => 'sc_busy', @granted);
my $a2 = $qg->access(policy => 'sc_busy');
my $b = $qg->access(policy => 'sc_other', @granted);

# What kind of process ran a call: the pid it answered, looked up (the policy's role sees no other
# session's backend_type; a worker's helpers live as long as it does).
sub kind_of
{
	my ($pid) = @_;
	return 'no answer' unless defined $pid && $pid =~ /^\d+$/;
	return $qg->sql("SELECT backend_type FROM pg_stat_activity WHERE pid = $pid");
}

sub ran_in
{
	my ($s, $key) = @_;
	my $res = $qg->get("/q/sc_slow?s=$s", key => $key // $a);
	is($res->{status}, 200, "sc_slow?s=$s: 200") or diag(QuerygateTest::describe($res));
	return kind_of($res->{json}[0]{pid});
}

sub send_slow
{
	my ($key, $s) = @_;
	my $sock = $qg->connect_raw;
	syswrite($sock, "GET /q/sc_slow?s=$s HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n\r\n");
	return $sock;
}

# Helpers running a query that sleeps `$s` seconds now.
sub sleeping
{
	my ($s) = @_;
	return $qg->sql(qq{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'querygate helper'
		AND state = 'active' AND wait_event = 'PgSleep'});
}

# --- the first slow call of a query: stopped in the worker, run again by a helper
is(ran_in(0), 'querygate http worker', 'a quick read runs in the worker');
is(ran_in(0.3), 'querygate helper', 'a read that ran past the threshold was run again by a helper');
is(ran_in(0.05), 'querygate helper', 'its query\'s next call goes to a helper at once');
is(ran_in(0), 'querygate helper', 'and one that turns out quick there too');
is(ran_in(0), 'querygate http worker', 'which brings the query back to the worker');
# An MCP tools/call is a call too: its answer waits for the helper as /q/{name}'s does.
my $mcp = $qg->post('/mcp', { jsonrpc => '2.0', id => 1, method => 'tools/call',
	params => { name => 'sc_slow', arguments => { s => 0.3 } } }, key => $a);
is($mcp->{status}, 200, 'a slow tools/call over MCP: 200') or diag(QuerygateTest::describe($mcp));
is($mcp->{json}{id}, 1, 'its JSON-RPC answer, to its id');
is(kind_of($mcp->{json}{result}{structuredContent}{rows}[0]{pid}), 'querygate helper', 'run by a helper');
is(ran_in(0), 'querygate helper', 'the query is slow now for /q/{name} too: one quick run in a helper');
is(ran_in(0), 'querygate http worker', 'brings it back');

my $counted = sub { $qg->sql(q{SELECT coalesce(sum(calls), 0) FROM querygate.stat_queries
	WHERE query = 'sc_slow'}) };
QuerygateTest::poll_until(sub { $counted->() >= 8 }, timeouts(10));
sleep(1); # what a helper counted reaches the table within its report interval
is($counted->(), '8', 'each call counted once: not the run the worker stopped');

# --- one key's 8 calls of 2 s: 6 of them in helpers (its share), its other 2 behind them
my $t0 = time();
my @held = map { send_slow($a, 2) } 1 .. 8;
ok(QuerygateTest::poll_until(sub { sleeping() >= 6 }, timeouts(10)), 'six helpers run the key\'s calls');
my $lookup_t0 = time();
my $res = $qg->get('/q/sc_lookup?id=3', key => $b);
my $took = time() - $lookup_t0;
is($res->{content}, '[{"v":"v3"}]', 'another key\'s lookup meanwhile');
cmp_ok($took, '<', 0.1 * $F, "answered within 100 ms ($took s)");
is(sleeping(), 6, 'the key holds no more than its share');

# Another policy's slow call finds a helper; another key of the busy policy waits for its policy.
my $other = send_slow($b, 0.3);
my $same_policy = send_slow($a2, 0.3);
my ($status, $body) = QuerygateTest::read_response($other, 1.5 * $F);
is($status, 200, 'another policy\'s slow call is answered while the key holds its share');
is(kind_of(($body // '') =~ /"pid":(\d+)/ ? $1 : undef), 'querygate helper', 'by a helper');
cmp_ok(time() - $t0, '<', 2, 'before the key\'s calls end') if $F == 1;
is((QuerygateTest::read_response($same_policy, 0.2))[0], 'none',
	'a key of the busy policy waits: its policy holds its share');
my @answers = map { [ QuerygateTest::read_response($_, timeouts(10)) ] } @held[0 .. 5];
is(scalar(grep { $_->[0] == 200 } @answers), 6, 'the key\'s first six calls answer');
($status) = QuerygateTest::read_response($same_policy, timeouts(5));
is($status, 200, 'then the other key of the policy, before the key\'s own waiting calls');
is((QuerygateTest::read_response($held[6], 0.5))[0], 'none', 'which are still running');
@answers = map { [ QuerygateTest::read_response($_, timeouts(10)) ] } @held[6, 7];
is(scalar(grep { $_->[0] == 200 } @answers), 2, 'and answer after their own key\'s');
cmp_ok(time() - $t0, '>=', 3.9, 'one after the other: about 4 s for 8 calls of 2 s');

# --- a caller that hangs up frees its helper, running or waiting
my @gone = map { send_slow($a, 30) } 1 .. 7;
ok(QuerygateTest::poll_until(sub { sleeping() == 6 }, timeouts(10)), 'six calls of 30 s run');
close($_) for @gone;
ok(QuerygateTest::poll_until(sub { sleeping() == 0 }, timeouts(5)),
	'the callers hung up: every helper stopped its call');
$res = $qg->get('/q/sc_slow?s=0.05', key => $a);
is($res->{status}, 200, 'the key calls again at once');

# --- exports: a key's three slow exports run in helpers, and another key's lookup is answered
my @exports = map {
	my $sock = $qg->connect_raw;
	syswrite($sock, "GET /q/sc_slow?s=2&stream=true HTTP/1.1\r\nHost: test\r\nX-API-Key: $a\r\n\r\n");
	$sock
} 1 .. 3;
ok(QuerygateTest::poll_until(sub { sleeping() >= 3 }, timeouts(10)), 'three helpers run the key\'s exports');
$lookup_t0 = time();
$res = $qg->get('/q/sc_lookup?id=4', key => $b);
$took = time() - $lookup_t0;
is($res->{content}, '[{"v":"v4"}]', 'another key\'s lookup meanwhile');
cmp_ok($took, '<', 0.1 * $F, "answered within 100 ms ($took s)");
for my $sock (@exports)
{
	my ($st, $exported) = QuerygateTest::read_response($sock, timeouts(10));
	is($st, 200, 'an export written by a helper: 200');
	like($exported // '', qr/^\[\{"slept":false,"pid":\d+\}\]$/, 'its rows, sent from the worker');
	is(kind_of(($exported // '') =~ /"pid":(\d+)/ ? $1 : undef), 'querygate helper', 'written by a helper');
}

# --- its own time limit, shorter than the threshold's handing on, is kept
$qg->expect_error($qg->get('/q/sc_slow?s=30&timeout=0.3', key => $a), 504, 'query_timeout',
	'a caller\'s time limit holds in a helper');

# --- a read that spends its budget where nothing checks for the cancel, then fails on its own: its
# failure is answered, and the cancel left pending is cleared, not raised in the worker's own code
# (where it would end the worker and drop every connection it holds)
my $worker = $qg->sql('SELECT pid FROM querygate.stat_workers');
my $log_from = -s $qg->node->logfile;
for my $i (1 .. 3)
{
	$qg->expect_error($qg->get('/q/sc_fails_late?n=50000000&z=0', key => $b), 500, 'query_failed',
		"a read that spent its budget and then failed ($i)");
}
is($qg->sql('SELECT pid FROM querygate.stat_workers'), $worker, 'the worker lives on');
unlike(slurp_file($qg->node->logfile, $log_from), qr/exited with exit code|canceling statement/,
	'and no cancel escaped');

# --- querygate.slow_call_threshold = 0: every read runs in the worker
$qg->set_and_reload('querygate.slow_call_threshold', '0');
ok(QuerygateTest::poll_until(sub { ran_in(0.05) eq 'querygate http worker' }, timeouts(10)),
	'with the threshold 0, a slow read runs in the worker');
$res = $qg->get('/q/sc_slow?s=0.05&stream=true', key => $a);
is($res->{status}, 200, 'an export with the threshold 0');
is(kind_of($res->{json}[0]{pid}), 'querygate http worker', 'is written by the worker');

# --- with nothing that records calls (no history, access log or run events), a quick run in a
# helper still brings its query back to the worker
$qg->sql('ALTER SYSTEM RESET querygate.slow_call_threshold');
$qg->sql('ALTER SYSTEM SET querygate.history = off');
$qg->sql('ALTER SYSTEM SET querygate.event_buffer = 0');
$qg->node->restart;
$qg->wait_health;
is(ran_in(0.3), 'querygate helper', 'untraced: a read past the threshold, run again by a helper');
is(ran_in(0), 'querygate helper', 'its next call goes to a helper, and is quick there');
is(ran_in(0), 'querygate http worker', 'which brings the query back to the worker');

done_testing();
