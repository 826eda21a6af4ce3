# A caller that hangs up while its query runs (src/call/client_watch.hpp), on one worker: the
# query is cancelled within a second or so, the worker serves the next caller at once instead of
# after the query's 20 s, the call is recorded as 499 client_closed (history, statistics), and a
# write cancelled that way is rolled back whole. A caller that stays is answered as before.
# Runs alone: it checks that a cancellation lands within a second or so.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(time sleep);

my $qg = QuerygateTest->start(name => 'hangup', workers => 1,
	conf => "querygate.allow_writes = on\nquerygate.helpers = 0\n"
	  . "querygate.statement_timeout = '60s'\nquerygate.history_flush_interval = 100\n");
my $F = QuerygateTest::timeouts(1);
$qg->sql(q{
	CREATE TABLE hu_t (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO hu_t VALUES (1, 0);
	SELECT querygate.save_query('hu_slow', 'SELECT pg_sleep(:s::float8) IS NULL AS slept');
	SELECT querygate.save_query('hu_write', 'UPDATE hu_t SET n = n + 1 WHERE id = 1 RETURNING n, pg_sleep(:s::float8) IS NULL AS slept');
	SELECT querygate.save_query('hu_fast', 'SELECT 1 AS one');
});
$qg->role('hu_role', select => ['hu_t'], grant => ['UPDATE ON hu_t']);
my $key = $qg->access(policy => 'hu_pol', run_as => 'hu_role', queries => [qw(hu_slow hu_write hu_fast)],
	key => 'hu_key', setup => q{SELECT querygate.grant_writes('hu_pol', '{update}');});

# Sends a call on a raw connection and hangs up after $after seconds, without reading an answer;
# returns the time it hung up.
sub call_and_hang_up
{
	my ($path, $id, $after) = @_;
	my $sock = $qg->connect_raw;
	# POST: a write is never a GET's (and a read may be either).
	print $sock "POST $path HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\nX-Request-Id: $id\r\n"
	  . "Content-Length: 0\r\n\r\n";
	sleep $after;
	close $sock;
	return time();
}

sub history_of
{
	my ($id) = @_;
	return $qg->sql(q{SELECT status || ' ' || coalesce(code, '-') FROM querygate.history WHERE request_id = }
		  . QuerygateTest::sql_quote($id));
}

# ---- a read
my $hung_up = call_and_hang_up('/q/hu_slow?s=20', 'hangup-read', 0.5);
my $res = QuerygateTest::fresh_request($qg, 'GET', '/q/hu_fast', key => $key);
my $waited = time() - $hung_up;
is($res->{status}, 200, 'the next caller is served on the one worker');
cmp_ok($waited, '<', 3 * $F, "soon after the first caller hung up (${waited}s), not after its query's 20 s");
ok(QuerygateTest::poll_until(sub { history_of('hangup-read') ne '' }), 'the hung-up call is recorded');
is(history_of('hangup-read'), '499 client_closed', 'as 499 client_closed');
is($qg->sql(q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep%' AND state = 'active' AND pid <> pg_backend_pid()}),
	'0', 'and its query runs no more');
is($qg->sql(q{SELECT coalesce(errors_by_code->>'client_closed', '0') FROM querygate.stat_queries WHERE query = 'hu_slow'}),
	'1', 'querygate.stat_queries counts it by its code');

# ---- a write: rolled back whole
$hung_up = call_and_hang_up('/q/hu_write?s=20', 'hangup-write', 0.5);
$res = QuerygateTest::fresh_request($qg, 'GET', '/q/hu_fast', key => $key);
is($res->{status}, 200, 'after a hung-up write, the next caller is served');
cmp_ok(time() - $hung_up, '<', 3 * $F, 'soon');
ok(QuerygateTest::poll_until(sub { history_of('hangup-write') ne '' }), 'the hung-up write is recorded');
is(history_of('hangup-write'), '499 client_closed', 'as 499 client_closed');
is($qg->sql('SELECT n FROM hu_t WHERE id = 1'), '0', 'and nothing of it is written: its transaction rolled back');

# ---- a caller that stays is answered
$res = QuerygateTest::fresh_request($qg, 'POST', '/q/hu_write?s=1', key => $key, headers => { 'X-Request-Id' => 'stays' });
is($res->{status}, 200, 'a caller that waits for its slow write is answered');
is($qg->sql('SELECT n FROM hu_t WHERE id = 1'), '1', 'and the write is done');
ok(QuerygateTest::poll_until(sub { history_of('stays') ne '' }), 'recorded');
is(history_of('stays'), '200 -', 'as 200');

done_testing();
