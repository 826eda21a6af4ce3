# Statistics and metrics (src/shmem/stat_table.hpp, src/shmem/worker_load.hpp,
# src/http/prometheus_text.hpp), over HTTP on two workers: querygate.stat_queries counts every call
# of a query by a caller allowed to call it, per query and policy, with errors by code, rows, bytes
# and times, whichever worker served it; nothing for names a caller made up or may not call;
# a write run by a write helper counts once; SQL callers wrote (POST /sql, MCP's execute_sql) in
# one row per policy of kind 'sql' with no query, whatever the statements, refusals and limits
# included, and nothing for SQL from a policy that takes none; /metrics has it as kind="sql"; querygate.stat_workers counts every request answered;
# GET /metrics is 404 without querygate.metrics_token_file, 401 without the token, and otherwise parses
# with the official Prometheus client's parser and says what the views say; querygate.statistics
# = off stops the counting; stat_reset() empties the table and only an administrator may call it.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use FindBin;
use IPC::Run ();

my $token = 'metrics-' . ('t' x 32);
my $qg = QuerygateTest->start(name => 'statistics', workers => 2,
	metrics_token => $token,
	conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE TABLE st_items (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO st_items SELECT g, 0 FROM generate_series(1, 10) g;
	SELECT querygate.save_query('st_item', 'SELECT id, n FROM st_items WHERE id = :id');
	SELECT querygate.save_query('st_range', 'SELECT id FROM st_items WHERE id <= :upto ORDER BY id');
	SELECT querygate.save_query('st_bump', 'UPDATE st_items SET n = n + 1 WHERE id = :id');
	SELECT querygate.save_query('st_secret', 'SELECT 1 AS one');
});
$qg->role('st_reader', select => ['st_items'], grant => ['UPDATE ON st_items']);
my $key1 = $qg->access(policy => 'st_one', run_as => 'st_reader',
	queries => [qw(st_item st_range st_bump)],
	setup => q{SELECT querygate.grant_writes('st_one', '{update}');});
my $key2 = $qg->access(policy => 'st_two', run_as => 'st_reader', queries => [qw(st_item)]);
# A key of two calls at once, refilled slowly: its calls past them are refused (429) and counted.
my $key3 = $qg->access(policy => 'st_three', run_as => 'st_reader', queries => [qw(st_item)],
	key_args => 'rate_per_second => 0.01, burst => 2');
# A policy granted SQL of its own, with a second key of one call at once.
my $sql_text = 'SELECT id, n FROM st_items WHERE id = :id';
my $key4 = $qg->access(policy => 'st_sql', run_as => 'st_reader', setup => q{
	SELECT querygate.allow_tables('st_sql', '{st_items}');
	SELECT querygate.grant_adhoc('st_sql');
});
my $key5 = $qg->access(policy => 'st_sql', key_args => 'rate_per_second => 0.01, burst => 1');

# Requests each worker answered, summed (querygate.stat_workers).
sub requests_answered
{
	return $qg->sql('SELECT coalesce(sum(requests), 0) FROM querygate.stat_workers');
}

# Scrapes /metrics with Debian's python3 and its prometheus_client parser.
sub scrape
{
	my (%o) = @_;
	my @cmd = ('/usr/bin/python3', "$FindBin::Bin/../metrics/scrape.py", '--port', $qg->port);
	push @cmd, '--token', $o{token} if defined $o{token};
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	return { error => "scrape.py failed: $err" } unless $ok;
	return QuerygateTest::json_decode($out);
}

# The samples of a family whose labels include every pair of %want.
sub samples
{
	my ($m, $family, %want) = @_;
	my $f = $m->{families}{$family} or return ();
	return grep {
		my $l = $_->[1];
		!grep { ($l->{$_} // '') ne $want{$_} } keys %want
	} @{ $f->{samples} };
}

sub value_of
{
	my ($m, $family, $name, %want) = @_;
	my @s = grep { $_->[0] eq $name } samples($m, $family, %want);
	return @s == 1 ? $s[0][2] : undef;
}

# ---- calls, each on a new connection so that both workers serve some
my $before = requests_answered();
my $made = 0;
for my $i (1 .. 7)
{
	my $res = $qg->get("/q/st_item?id=$i", key => $key1, client => $qg->new_client);
	is($res->{status}, 200, "st_item call $i") or diag(QuerygateTest::describe($res));
	$made++;
}
for my $i (1 .. 3)
{
	my $res = $qg->get('/q/st_item?id=nope', key => $key1, client => $qg->new_client);
	$qg->expect_error($res, 400, 'param_invalid', "st_item with a bad id ($i)");
	$made++;
}
for my $i (1 .. 2)
{
	my $res = $qg->get("/q/st_item?id=$i", key => $key2, client => $qg->new_client);
	is($res->{status}, 200, "st_item by the second policy, call $i");
	$made++;
}
for my $i (1 .. 4)
{
	my $res = $qg->get("/q/st_item?id=$i", key => $key3);
	is($res->{status}, $i <= 2 ? 200 : 429, "st_item by a key of two calls at once, call $i");
	$made++;
}
# Refused by the limit before anything else: a query its policy is not granted is not counted.
$qg->expect_error($qg->get('/q/st_range?upto=1', key => $key3), 429, 'rate_limited',
	'a query not granted, by a limited key');
$made++;
my $range = $qg->get('/q/st_range?upto=4', key => $key1);
is(scalar @{ $range->{json} // [] }, 4, 'st_range answers 4 rows');
$made++;
my $bump = $qg->post('/q/st_bump', { params => { id => 1 } }, key => $key1);
is($bump->{status}, 200, 'st_bump (a write, run by a write helper)') or diag(QuerygateTest::describe($bump));
$made++;
# Not counted by query: a query the policy may not call, a name nobody saved, a wrong key.
$qg->expect_error($qg->get('/q/st_secret', key => $key1), 404, 'query_not_found', 'a query not granted');
$qg->expect_error($qg->get('/q/made_up_name', key => $key1), 404, 'query_not_found', 'a made-up name');
$qg->expect_error($qg->get('/q/st_item?id=1', key => 'qg_wrong'), 401, 'unauthorized', 'a wrong key');
$qg->expect_error($qg->get('/nowhere'), 404, 'not_found', 'an endpoint that does not exist');
$made += 4;

# ---- SQL callers wrote: counted per policy under its kind, whatever the statement
sub sql_call
{
	my ($key, $sql, %params) = @_;
	return $qg->post('/sql', { sql => $sql, params => \%params }, key => $key, client => $qg->new_client);
}
for my $i (1 .. 3)
{
	my $res = sql_call($key4, $sql_text, id => $i);
	is($res->{status}, 200, "POST /sql, call $i") or diag(QuerygateTest::describe($res));
	$made++;
}
my $sql_range = sql_call($key4, 'SELECT id FROM st_items WHERE id <= :upto ORDER BY id', upto => 4);
is(scalar @{ $sql_range->{json} // [] }, 4, 'POST /sql of another statement answers 4 rows');
$qg->expect_error(sql_call($key4, $sql_text, id => 'nope'), 400, 'param_invalid', 'POST /sql with a bad id');
$qg->expect_error(sql_call($key4, 'SELEC 1'), 400, 'invalid_sql', 'POST /sql that does not parse');
$qg->expect_error(sql_call($key4, 'SELECT 1 AS one FROM st_nowhere'), 403, 'name_not_allowed',
	'POST /sql naming a table outside the allow-list');
is(sql_call($key5, $sql_text, id => 1)->{status}, 200, 'POST /sql by a key of one call at once');
$qg->expect_error(sql_call($key5, $sql_text, id => 2), 429, 'rate_limited', 'and its second call');
my $mcp = $qg->post('/mcp', { jsonrpc => '2.0', id => 1, method => 'tools/call',
		params => { name => 'execute_sql', arguments => { sql => $sql_text, params => { id => 5 } } } },
	key => $key4);
is($mcp->{json}{result}{structuredContent}{rows}[0]{id}, 5, "MCP's execute_sql")
  or diag(QuerygateTest::describe($mcp));
$made += 7;
# Not counted: SQL from a policy that takes none, and from a wrong key.
$qg->expect_error(sql_call($key1, $sql_text, id => 1), 403, 'sql_not_allowed', 'POST /sql by a policy not granted SQL');
$qg->expect_error(sql_call('qg_wrong', $sql_text, id => 1), 401, 'unauthorized', 'POST /sql with a wrong key');
$made += 2;

is($qg->sql(q{SELECT string_agg(format('%s/%s: %s calls, %s errors %s, %s rows', query, policy, calls,
                                       errors, errors_by_code, rows), '; ' ORDER BY query, policy)
                FROM querygate.stat_queries WHERE kind = 'query'}),
	'st_bump/st_one: 1 calls, 0 errors {}, 1 rows; '
	  . 'st_item/st_one: 10 calls, 3 errors {"param_invalid": 3}, 7 rows; '
	  . 'st_item/st_three: 4 calls, 2 errors {"rate_limited": 2}, 2 rows; '
	  . 'st_item/st_two: 2 calls, 0 errors {}, 2 rows; '
	  . 'st_range/st_one: 1 calls, 0 errors {}, 4 rows',
	'stat_queries: every call of a granted query, per query and policy, whichever worker ran it; '
	  . 'the write once; calls refused by a rate limit; nothing for the rest');
is($qg->sql(q{SELECT string_agg(format('%s/%s/%s: %s calls, %s errors %s, %s rows', kind,
                                       coalesce(query, 'NULL'), policy, calls, errors,
                                       errors_by_code, rows), '; ')
                FROM querygate.stat_queries WHERE kind <> 'query'}),
	'sql/NULL/st_sql: 10 calls, 4 errors '
	  . '{"invalid_sql": 1, "rate_limited": 1, "param_invalid": 1, "name_not_allowed": 1}, 9 rows',
	'stat_queries: SQL in one row for its policy, kind sql and no query, over HTTP and MCP, '
	  . 'refusals and limits included; nothing for a policy not granted SQL');
is($qg->sql(q{SELECT bool_and(total_time > 0 AND min_time > 0 AND min_time <= mean_time
                              AND mean_time <= max_time AND stddev_time >= 0
                              AND abs(total_time - mean_time * calls) < 0.001 * total_time + 0.001)
                FROM querygate.stat_queries}),
	't', 'stat_queries: times in order (min <= mean <= max, total = mean x calls)');
is($qg->sql(q{SELECT bytes FROM querygate.stat_queries WHERE query = 'st_range'}),
	length($range->{content}), 'stat_queries: bytes are the body answered');
ok(QuerygateTest::poll_until(sub { requests_answered() == $before + $made }),
	"stat_workers: the $made requests made are counted")
  or diag('counted ' . (requests_answered() - $before));
is($qg->sql(q{SELECT count(*) || ' workers, ' || bool_and(pid > 0 AND started <= now() AND busy_time > 0
                                                     AND in_flight = 0 AND connections >= 0)
                FROM querygate.stat_workers}),
	'2 workers, true', 'stat_workers: a row per running worker, busy some time');
is($qg->sql(q{SELECT string_agg(w.worker::text, ',' ORDER BY w.worker)
                FROM querygate.stat_workers w JOIN pg_stat_activity a USING (pid)
               WHERE a.backend_type = 'querygate http worker'}),
	'1,2', 'stat_workers: pids are the HTTP workers');

# ---- /metrics
my $denied = $qg->get('/metrics');
$qg->expect_error($denied, 401, 'unauthorized', '/metrics without the token');
is($denied->{headers}{'www-authenticate'}, 'Bearer', '/metrics without the token: WWW-Authenticate');
$qg->expect_error($qg->get('/metrics', bearer => 'x' . $token), 401, 'unauthorized',
	'/metrics with a wrong token');
$qg->expect_error($qg->get('/metrics', bearer => $key1), 401, 'unauthorized',
	'/metrics with an API key instead of the token');
$qg->expect_error($qg->request('POST', '/metrics', bearer => $token), 405, 'method_not_allowed',
	'POST /metrics');
$made += 4;

ok(QuerygateTest::poll_until(sub { requests_answered() == $before + $made }),
	'stat_workers: the refused /metrics requests are counted too');
my $workers_before = requests_answered();
my $m = scrape(token => $token);
is($m->{error}, undef, 'the Prometheus parser reads /metrics');
is($m->{status}, 200, '/metrics with the token: 200');
like($m->{content_type}, qr{^text/plain; version=0\.0\.4}, '/metrics: the text format 0.0.4');
is(value_of($m, 'querygate_build_info', 'querygate_build_info', version => '0.1.0'), 1,
	'querygate_build_info{version="0.1.0"} 1');
is(value_of($m, 'querygate_calls', 'querygate_calls_total', query => 'st_item', code => 'ok'), 11,
	'querygate_calls_total{query="st_item",code="ok"}: 11, the policies summed');
is(value_of($m, 'querygate_calls', 'querygate_calls_total', query => 'st_item', code => 'rate_limited'), 2,
	'querygate_calls_total{query="st_item",code="rate_limited"}: 2');
is(value_of($m, 'querygate_calls', 'querygate_calls_total', query => 'st_item', code => 'param_invalid'),
	3, 'querygate_calls_total{query="st_item",code="param_invalid"}: 3');
is(value_of($m, 'querygate_calls', 'querygate_calls_total', query => 'st_bump', code => 'ok'), 1,
	'querygate_calls_total{query="st_bump"}: the write once');
is(scalar(samples($m, 'querygate_calls', query => 'made_up_name')), 0, 'no series for a made-up name');
is(scalar(samples($m, 'querygate_calls', query => 'st_secret')), 0, 'no series for a query not granted');
is($m->{families}{querygate_call_duration_seconds}{type}, 'histogram', 'call duration: a histogram');
is(value_of($m, 'querygate_call_duration_seconds', 'querygate_call_duration_seconds_count',
		query => 'st_item'), 16, 'the histogram counts every st_item call');
my @buckets = map { $_->[2] } grep { $_->[0] eq 'querygate_call_duration_seconds_bucket' }
  samples($m, 'querygate_call_duration_seconds', query => 'st_item');
is(scalar(@buckets), 17, '17 buckets, +Inf included');
is($buckets[-1], 16, 'the +Inf bucket holds every call');
is(join(',', grep { $buckets[$_] < $buckets[ $_ - 1 ] } 1 .. $#buckets), '', 'buckets are cumulative');
my $sum = value_of($m, 'querygate_call_duration_seconds', 'querygate_call_duration_seconds_sum',
	query => 'st_item');
my $total_ms = $qg->sql(q{SELECT sum(total_time) FROM querygate.stat_queries WHERE query = 'st_item'});
ok(defined $sum && abs($sum * 1000 - $total_ms) < 0.01, "the histogram's sum is stat_queries' total time")
  or diag("sum $sum s, total_time $total_ms ms");
is(value_of($m, 'querygate_call_rows', 'querygate_call_rows_total', query => 'st_range'), 4,
	'querygate_call_rows_total{query="st_range"}: 4');
is(value_of($m, 'querygate_calls', 'querygate_calls_total', kind => 'sql', code => 'ok'), 6,
	'querygate_calls_total{kind="sql",query="",code="ok"}: 6, HTTP and MCP, the policies summed');
is(value_of($m, 'querygate_calls', 'querygate_calls_total', kind => 'sql', code => 'name_not_allowed'), 1,
	'querygate_calls_total{kind="sql",code="name_not_allowed"}: 1');
is(value_of($m, 'querygate_calls', 'querygate_calls_total', kind => 'query', query => 'st_item', code => 'ok'),
	11, 'saved queries\' series have kind="query"');
is(join(',', sort { $a cmp $b } map { $_->[1]{query} // 'none' } samples($m, 'querygate_calls', kind => 'sql')),
	join(',', ('') x 5), 'SQL\'s series: one per code it ended with, each with an empty query');
is(value_of($m, 'querygate_call_duration_seconds', 'querygate_call_duration_seconds_count', kind => 'sql'),
	10, 'the histogram counts every SQL call');
is(value_of($m, 'querygate_call_rows', 'querygate_call_rows_total', kind => 'sql'), 9,
	'querygate_call_rows_total{kind="sql"}: 9');
is(value_of($m, 'querygate_calls_unrecorded', 'querygate_calls_unrecorded_total'), 0,
	'no call unrecorded');
my @per_worker = samples($m, 'querygate_worker_requests');
is(scalar(@per_worker), 2, 'querygate_worker_requests_total: a series per worker');
my $scraped_total = 0;
$scraped_total += $_->[2] for @per_worker;
# The scrape itself is counted by its worker only once answered.
is($scraped_total, $workers_before, 'the workers\' request counts are stat_workers\'');
is($m->{families}{querygate_worker_busy_seconds}{type}, 'counter', 'busy time: a counter');
my @labels = map { sort keys %{ $_->[1] } } map { @{ $_->{samples} } } values %{ $m->{families} };
my %label = map { $_ => 1 } @labels;
is(join(',', sort keys %label), 'code,kind,le,query,version,worker',
	'labels are only kind, query, code, le, version, worker');
unlike(QuerygateTest::json_encode($m), qr/\Q$key1\E|st_one|st_two|st_sql/, 'no key and no policy in the metrics');
unlike(QuerygateTest::json_encode($m), qr/st_items|sql \d/, 'and no statement, nor its name in a worker');

# ---- who may see and reset
$qg->sql(q{CREATE ROLE st_nobody LOGIN; CREATE ROLE st_admin LOGIN; GRANT querygate_admin TO st_admin;});
for my $what ('SELECT * FROM querygate.stat_queries', 'SELECT * FROM querygate.stat_workers',
	'SELECT querygate.stat_reset()')
{
	my ($rc, $out, $err) = $qg->node->psql('postgres', "SET ROLE st_nobody; $what");
	like($err, qr/permission denied/, "an ordinary role: $what is denied");
}
# The token is in a file (querygate.metrics_token_file), never in a setting anyone can read.
my ($rc, $out, $err) = $qg->node->psql('postgres', "SET ROLE st_admin; SELECT pg_read_file('metrics.token')");
like($err, qr/permission denied/, 'an administrator who is not a superuser cannot read the token file');
unlike($qg->sql(q{SELECT string_agg(setting, ',') FROM pg_settings WHERE name LIKE 'querygate.%'}),
	qr/\Q$token\E/, 'and the token is in no setting');
($rc, $out, $err) = $qg->node->psql('postgres', 'SET ROLE st_admin; SELECT querygate.stat_reset()');
is($rc, 0, 'an administrator may reset the statistics') or diag($err);
is($qg->sql('SELECT count(*) FROM querygate.stat_queries'), 0, 'after the reset, stat_queries is empty');
is(value_of(scrape(token => $token), 'querygate_calls', 'querygate_calls_total', query => 'st_item',
		code => 'ok'), undef, 'and /metrics has no st_item series after the reset');
my $again = $qg->get('/q/st_item?id=2', key => $key2);
is($qg->sql(q{SELECT calls FROM querygate.stat_queries WHERE query = 'st_item'}), 1,
	'a call after the reset starts the count again');

# ---- turning statistics off
$qg->set_and_reload('querygate.statistics', 'off');
ok(QuerygateTest::poll_until(sub {
			my $a = $qg->sql(q{SELECT calls FROM querygate.stat_queries WHERE query = 'st_item' AND policy = 'st_one'});
			$qg->get('/q/st_item?id=1', key => $key1, client => $qg->new_client);
			$qg->get('/q/st_item?id=1', key => $key1, client => $qg->new_client);
			my $b = $qg->sql(q{SELECT calls FROM querygate.stat_queries WHERE query = 'st_item' AND policy = 'st_one'});
			return $a == $b;
		}), 'querygate.statistics = off: calls are not counted');
is(value_of(scrape(token => $token), 'querygate_statistics_enabled', 'querygate_statistics_enabled'), 0,
	'querygate_statistics_enabled 0');

# ---- a second token while the first is rotated out, then without a token /metrics does not exist
$qg->write_secret_file('metrics.token', [ $token, "$token-next" ]);
$qg->sql('SELECT pg_reload_conf()');
ok(QuerygateTest::poll_until(sub { $qg->get('/metrics', bearer => "$token-next", client => $qg->new_client)->{status} == 200 }),
	'a second line of the token file is accepted after a reload');
is($qg->get('/metrics', bearer => $token, client => $qg->new_client)->{status}, 200, 'and so is the first');
$qg->set_and_reload('querygate.metrics_token_file', '');
ok(QuerygateTest::poll_until(sub { $qg->get('/metrics', bearer => $token, client => $qg->new_client)->{status} == 404 }),
	'querygate.metrics_token_file empty: /metrics is 404');
$qg->expect_error($qg->get('/metrics', bearer => $token), 404, 'not_found',
	'/metrics without a token set: not_found, as any unknown endpoint');
$qg->write_secret_file('metrics.token', $token, 0644);
my $log_offset = -s $qg->node->logfile;
$qg->set_and_reload('querygate.metrics_token_file', 'metrics.token');
# A worker reads the file at the first request after the reload.
ok(QuerygateTest::poll_until(sub {
			$qg->get('/metrics', bearer => $token, client => $qg->new_client)->{status} == 404
			  && $qg->node->log_contains('GET /metrics is off: secret file .*metrics\.token', $log_offset) }),
	'a token file others may read: /metrics is 404 and the log says why, naming the file');
unlike(slurp_file($qg->node->logfile, $log_offset), qr/\Q$token\E/, 'the log never holds the token');

done_testing();
