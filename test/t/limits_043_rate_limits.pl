# Rate limits, in-flight limits and quotas (src/rules/rate_limits.hpp, src/shmem/limit_table.hpp),
# over HTTP on two workers: a burst is exact across workers under concurrent calls (a rate so low
# that no token comes back during the test, so exactly the burst is admitted, whichever worker
# serves); a key's own limits win over its policy's, limit by limit; 429 rate_limited and
# quota_exceeded with Retry-After and the RateLimit fields (the IETF draft's RateLimit and
# RateLimit-Policy, read as Structured Fields; the earlier drafts' three with
# querygate.rate_limit_headers = legacy), before anything runs; bearer tokens
# count under their policy; max_in_flight refuses a second call while the first runs, and a write
# handed to a helper leaves the count when it answers; a quota's count survives a clean restart
# (querygate.quota_usage, saved by the writer process) and is shown in the keys view; calls
# without valid credentials are counted per address under querygate.anonymous_rate_limit.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use POSIX ();

my $secret = 'r' x 40;
my $qg = QuerygateTest->start(name => 'rate_limits', workers => 2,
	jwt_secret => $secret,
	conf => "querygate.allow_writes = on\n"
	  . "querygate.quota_flush_interval = 1\n"
	  # The slow call sleeps for a time the suite's time factor stretches (10 s and more under the
	  # sanitizers and Valgrind): no statement timeout may end it first.
	  . "querygate.statement_timeout = 0\n");
$qg->sql(q{
	CREATE TABLE rl_items (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO rl_items SELECT g, 0 FROM generate_series(1, 10) g;
	SELECT querygate.save_query('rl_item', 'SELECT id, n FROM rl_items WHERE id = :id');
	SELECT querygate.save_query('rl_slow', 'SELECT id, pg_sleep(:s) IS NULL AS slept FROM rl_items WHERE id = 1');
	SELECT querygate.save_query('rl_bump', 'UPDATE rl_items SET n = n + 1 WHERE id = :id');
});
$qg->role('rl_reader', select => ['rl_items'], grant => ['UPDATE ON rl_items']);
my $key = $qg->access(policy => 'limited', run_as => 'rl_reader', jwt_issuers => ['https://issuer.test'],
	queries => [qw(rl_item rl_slow rl_bump)],
	setup => q{SELECT querygate.grant_writes('limited', '{update}');});

# Calls /q/rl_item?id=1 from $connections processes at once, $each calls apiece, each process
# with its own keep-alive connection; returns a hash of status => count.
sub burst_of_calls
{
	my ($secret_key, $connections, $each) = @_;
	my @readers;
	for my $c (1 .. $connections)
	{
		pipe(my $r, my $w) or die "pipe: $!";
		my $pid = fork();
		die "fork: $!" unless defined $pid;
		if ($pid == 0)
		{
			close $r;
			my $client = $qg->new_client;
			my @got;
			for (1 .. $each)
			{
				my $res = $qg->get('/q/rl_item?id=1', key => $secret_key, client => $client);
				push @got, $res->{status};
			}
			print $w join(',', @got), "\n";
			close $w;
			POSIX::_exit(0);
		}
		close $w;
		push @readers, [ $pid, $r ];
	}
	my %count;
	for my $p (@readers)
	{
		my $fh = $p->[1];
		my $line = <$fh> // '';
		chomp $line;
		$count{$_}++ for grep { length } split /,/, $line;
		waitpid($p->[0], 0);
	}
	return \%count;
}

# ---- a burst, exact across the two workers
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', rate_per_second => 0.001, burst => 7)});
my $count = burst_of_calls($key, 8, 5);
is($count->{200} // 0, 7, 'of 40 concurrent calls on 8 connections, exactly the burst of 7 is admitted');
is($count->{429} // 0, 33, 'and the other 33 are refused with 429');
my $refused = $qg->get('/q/rl_item?id=1', key => $key);
$qg->expect_error($refused, 429, 'rate_limited', 'over the rate');
# A token a thousand seconds: some of one has come back since the burst.
cmp_ok($refused->{headers}{'retry-after'}, '>=', 900, 'Retry-After: the seconds until a token is back');
cmp_ok($refused->{headers}{'retry-after'}, '<=', 1000, 'at most 1/0.001');
# The IETF draft's fields, read as Structured Fields (RFC 9651).
my $f = QuerygateTest::limit_fields($refused);
is($f->{policy}, 'rate', 'RateLimit and RateLimit-Policy name the policy "rate"');
is($f->{q}, 7, 'RateLimit-Policy: q is the burst');
is($f->{w}, 7000, 'and w the seconds an empty bucket takes to fill (7/0.001)');
is($f->{r}, 0, 'RateLimit: r=0 calls left');
cmp_ok($f->{t}, '>', 6900, 'and t the seconds until the bucket is full');
cmp_ok($f->{t}, '<=', 7000, 'at most 7/0.001');
ok(!exists $refused->{headers}{'ratelimit-limit'}, 'and none of the earlier drafts\' three fields');
like($qg->sql(q{SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'querygate http worker'}),
	qr/^\d+,\d+$/, 'two workers served them');

# ---- a key's own limits win, limit by limit; 0 removes one
my $plain = $qg->access(policy => 'limited');    # a second key of the policy, no limits of its own
my $own_quota = $qg->access(policy => 'limited', key_args => 'quota => 1000');
$qg->sql(q{SELECT querygate.set_limits(policy => 'limited', rate_per_second => 0.001, burst => 2)});
$count = burst_of_calls($plain, 2, 3);
is($count->{200} // 0, 2, "a key without limits of its own gets its policy's burst of 2");
$count = burst_of_calls($own_quota, 2, 3);
is($count->{200} // 0, 2, "a key with only a quota of its own keeps its policy's rate");
my $ok = $qg->get('/q/rl_item?id=1', key => $key);
is($ok->{status}, 429, "the first key keeps its own (spent) burst of 7, not its policy's") or diag(QuerygateTest::describe($ok));
is($qg->sql(q{SELECT rate_per_second || ' ' || burst FROM querygate.policies WHERE name = 'limited'}),
	'0.001 2', 'the policies view shows the limits');
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', rate_per_second => 0, burst => 0)});
is($qg->sql(q{SELECT coalesce(rate_per_second::text, 'none') FROM querygate.keys WHERE name = 'limited_key1'}),
	'none', 'set_limits with 0 removed the key\'s own rate (the keys view shows none)');
$qg->sql(q{SELECT querygate.set_limits(policy => 'limited', rate_per_second => 0, burst => 0)});

# ---- a success reports the limit closest to refusing
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', rate_per_second => 100, burst => 50)});
my $fine = $qg->get('/q/rl_item?id=1', key => $key);
$qg->expect_rows($fine, [ { id => 1, n => 0 } ], 'under the rate');
my $ff = QuerygateTest::limit_fields($fine);
is($ff->{policy}, 'rate', 'a success carries RateLimit');
cmp_ok($ff->{r}, '<=', 49, 'and what is left of the burst');
ok(!exists $fine->{headers}{'ratelimit-policy'}, 'and no RateLimit-Policy (a 429 carries it)');
ok(!defined $fine->{headers}{'retry-after'}, 'and no Retry-After');
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', rate_per_second => 0, burst => 0)});
my $unlimited = $qg->get('/q/rl_item?id=1', key => $key);
ok(!defined $unlimited->{headers}{'ratelimit'}, 'a caller without limits gets no RateLimit field');

# ---- bearer tokens count under their policy
$qg->sql(q{SELECT querygate.set_limits(policy => 'limited', rate_per_second => 0.001, burst => 3)});
my @tokens = map { jwt_hs256({ policy => 'limited', iss => 'https://issuer.test', sub => "user$_", exp => time() + 3600 }, $secret) } 1 .. 2;
my @statuses = map { $qg->get('/q/rl_item?id=1', bearer => $tokens[ $_ % 2 ])->{status} } 1 .. 5;
is(join(' ', @statuses), '200 200 200 429 429', "every token of a policy shares the policy's burst of 3");
$qg->sql(q{SELECT querygate.set_limits(policy => 'limited', rate_per_second => 0, burst => 0)});

# ---- in flight: a second call while the first runs is refused; a write's helper gives it back
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', max_in_flight => 1)});
my $slow = QuerygateTest::start_request($qg, '/q/rl_slow?s=' . timeouts(2), 'X-API-Key' => $key);
# A slow read runs in a helper once it has run past querygate.slow_call_threshold in the worker
# (test/t/limits_073_slow_calls.pl), keeping its place in flight.
ok(poll_until(sub { $qg->sql(q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep%' AND state = 'active' AND backend_type = 'querygate helper'}) eq '1' }),
	'the slow call runs, in a helper');
my $second = $qg->get('/q/rl_item?id=1', key => $key, client => $qg->new_client);
$qg->expect_error($second, 429, 'rate_limited', 'a second call while one runs');
is($second->{headers}{'retry-after'}, 1, 'Retry-After: 1');
my $first = QuerygateTest::finish_request($slow, timeouts(30));
is($first->{status}, 200, 'the slow call answers');
$qg->expect_rows($qg->get('/q/rl_item?id=1', key => $key), [ { id => 1, n => 0 } ], 'after it, a call is admitted');
for my $i (1 .. 3)
{
	my $w = $qg->post('/q/rl_bump', { params => { id => 2 } }, key => $key);
	is("$w->{status} $w->{content}", '200 {"rows_affected":1}', "write $i (in a helper) answers and leaves the count");
}
is($qg->sql('SELECT n FROM rl_items WHERE id = 2'), '3', 'and the writes were made');
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', max_in_flight => 0)});

# ---- quotas: counted per period, refused when used up, saved and read back after a restart
# A quota per day: this part runs inside one (two restarts included).
$qg->day_with_room(QuerygateTest::timeouts(90));
my $qkey = $qg->access(policy => 'limited', key => 'quota_key', key_args => 'quota => 3');
for my $i (1 .. 3)
{
	my $res = $qg->get('/q/rl_item?id=1', key => $qkey);
	is($res->{status}, 200, "quota call $i admitted");
	my $qf = QuerygateTest::limit_fields($res);
	is("$qf->{policy} $qf->{r}", 'daily ' . (3 - $i), "and RateLimit says \"daily\";r=" . (3 - $i));
}
my $over = $qg->get('/q/rl_item?id=1', key => $qkey);
$qg->expect_error($over, 429, 'quota_exceeded', 'the fourth call of a quota of 3 a day');
my $to_midnight = 86400 - (time() % 86400);
cmp_ok(abs($over->{headers}{'retry-after'} - $to_midnight), '<=', 5, 'Retry-After: the seconds until midnight UTC');
my $of = QuerygateTest::limit_fields($over);
is("$of->{policy} $of->{q} $of->{w}", 'daily 3 86400', 'RateLimit-Policy: "daily";q=3;w=86400');
is($of->{t}, $over->{headers}{'retry-after'}, 'RateLimit\'s t: when the period ends');
ok(poll_until(sub { $qg->sql(q{SELECT quota_used FROM querygate.keys WHERE name = 'quota_key'}) eq '3' }),
	'the writer saved the count: the keys view says 3 used');
is($qg->sql(q{SELECT quota || ' ' || quota_period FROM querygate.keys WHERE name = 'quota_key'}), '3 day',
	'create_key stored the quota, per day by default');
$qg->node->restart;
ok($qg->wait_health, 'restarted');
$qg->expect_error($qg->get('/q/rl_item?id=1', key => $qkey), 429, 'quota_exceeded', 'after a clean restart, the quota is still used up');
# A call counted just before a clean stop is saved by the stop, not by the interval.
$qg->set_and_reload('querygate.quota_flush_interval', '3600');
$qg->sql(q{SELECT querygate.set_limits(key => 'quota_key', quota => 10)});
ok(poll_until(sub { $qg->get('/q/rl_item?id=1', key => $qkey)->{status} == 200 }), 'a raised quota admits again');
my $used = $qg->sql(q{SELECT quota_used FROM querygate.keys WHERE name = 'quota_key'});
$qg->node->restart;
ok($qg->wait_health, 'restarted again');
is($qg->sql(q{SELECT quota_used FROM querygate.keys WHERE name = 'quota_key'}), '4',
	"a clean stop saved the count (4, where the interval had saved $used)");
my $fifth = $qg->get('/q/rl_item?id=1', key => $qkey);
is(QuerygateTest::limit_fields($fifth)->{r}, 5, 'and the count goes on from it after the start (5 of 10 left)');

# ---- no valid credentials: counted per address
$qg->set_and_reload('querygate.anonymous_rate_limit', '0.001');
$qg->set_and_reload('querygate.anonymous_burst', '3');
ok(poll_until(sub { $qg->get('/q/rl_item?id=1')->{status} == 429 }), 'calls without a key are limited once the reload is seen');
my $anon = $qg->get('/q/rl_item?id=1', key => 'not-a-key');
$qg->expect_error($anon, 429, 'rate_limited', 'a wrong key from the same address, over its limit');
cmp_ok($anon->{headers}{'retry-after'} // 0, '>=', 900, 'with Retry-After');
$qg->expect_rows($qg->get('/q/rl_item?id=1', key => $key), [ { id => 1, n => 0 } ], 'a valid key from that address is not limited by it');
$qg->set_and_reload('querygate.anonymous_rate_limit', '0');
ok(poll_until(sub { $qg->get('/q/rl_item?id=1')->{status} == 401 }), 'with the limit off, 401 again');

# ---- querygate.rate_limit_headers = refused: only a 429 says where the caller stands
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', rate_per_second => 100, burst => 1000)});
$qg->set_and_reload('querygate.rate_limit_headers', 'refused');
ok(QuerygateTest::poll_fresh(sub { $qg->fresh_request('GET', '/q/rl_item?id=1', key => $key) },
		sub { $_[0]{status} == 200 && !exists $_[0]{headers}{'ratelimit'} }),
	'with refused, a success to a limited caller has no RateLimit (8 in a row, fresh connections)');
my $quiet = $qg->fresh_request('GET', '/q/rl_item?id=1', key => $key);
$qg->expect_rows($quiet, [ { id => 1, n => 0 } ], 'the call is answered as before');
is(join(',', grep { /^ratelimit|^retry-after$/ } sort keys %{ $quiet->{headers} }), '',
	'and carries no RateLimit field (nor the earlier drafts\' three) nor Retry-After');
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', rate_per_second => 0.001, burst => 1)});
my @answers = map { $qg->get('/q/rl_item?id=1', key => $key) } 1 .. 2;
is(join(' ', map { $_->{status} } @answers), '200 429', 'a burst of 1: the first call admitted, the second refused');
ok(!exists $answers[0]{headers}{'ratelimit'}, 'the admitted one without RateLimit');
$qg->expect_error($answers[1], 429, 'rate_limited', 'the refused one');
my $rf = QuerygateTest::limit_fields($answers[1]);
is("$rf->{policy} $rf->{q} $rf->{r}", 'rate 1 0', 'the 429 still carries RateLimit and RateLimit-Policy');
cmp_ok($rf->{t}, '>', 0, 'with t');
cmp_ok($answers[1]{headers}{'retry-after'}, '>=', 900, 'and Retry-After');

# ---- querygate.rate_limit_headers = legacy: the earlier drafts' three fields, on every answer
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', rate_per_second => 100, burst => 1000)});
$qg->set_and_reload('querygate.rate_limit_headers', 'legacy');
ok(QuerygateTest::poll_fresh(sub { $qg->fresh_request('GET', '/q/rl_item?id=1', key => $key) },
		sub { $_[0]{status} == 200 && defined $_[0]{headers}{'ratelimit-remaining'} }),
	'with legacy, every success carries RateLimit-Remaining');
my $legacy = $qg->fresh_request('GET', '/q/rl_item?id=1', key => $key);
is($legacy->{headers}{'ratelimit-limit'}, 1000, 'RateLimit-Limit is the burst');
cmp_ok($legacy->{headers}{'ratelimit-remaining'}, '<', 1000, 'RateLimit-Remaining what is left of it');
like($legacy->{headers}{'ratelimit-reset'}, qr/^\d+$/, 'RateLimit-Reset in seconds');
ok(!exists $legacy->{headers}{'ratelimit'}, 'and no draft field');
$qg->set_and_reload('querygate.rate_limit_headers', 'draft');
ok(QuerygateTest::poll_fresh(sub { $qg->fresh_request('GET', '/q/rl_item?id=1', key => $key) },
		sub { $_[0]{status} == 200 && defined $_[0]{headers}{'ratelimit'} && !exists $_[0]{headers}{'ratelimit-limit'} }),
	'back to draft (the default): every success carries RateLimit again');

# ---- /catalog says the caller's policies, as RateLimit-Policy does
$qg->sql(q{SELECT querygate.set_limits(key => 'limited_key1', quota => 5000, quota_period => 'month')});
my $caller = $qg->get('/catalog', key => $key)->{json}{caller};
my $policies = QuerygateTest::sf_list($caller->{'RateLimit-Policy'});
is(join(' | ', map { "$_->[0][0]:$_->[0][1]" } @{ $policies // [] }), 'string:rate | string:monthly',
	'/catalog\'s caller: a RateLimit-Policy List, the rate then the quota');
is(join(' ', map { "$_->[1]{q}[0]:$_->[1]{q}[1] $_->[1]{w}[0]" } @{ $policies // [] }),
	'integer:1000 integer integer:5000 integer', 'each with Integer q and w');
is($policies->[0][1]{w}[1], 10, 'the rate\'s window: 1000 calls at 100 a second');
cmp_ok($policies->[1][1]{w}[1], '>=', 28 * 86400, 'the quota\'s: this month');
cmp_ok($policies->[1][1]{w}[1], '<=', 31 * 86400, 'at most 31 days');
is_deeply($qg->get('/catalog', key => $qg->access(policy => 'unlimited_catalog', run_as => 'rl_reader', queries => ['rl_item']))->{json}{caller},
	{}, 'a caller without limits: an empty caller section');

done_testing();
