# A call's time limit (src/call/query_runner.cpp, call_timeout): the shortest of
# querygate.statement_timeout, its policy's (set_policy(statement_timeout => ...)) and the caller's
# (?timeout=, "timeout" in a POST body, or Prefer: timeout=N, in seconds). Neither a policy nor a
# caller can lengthen it; a write handed to a write helper keeps the caller's limit; a malformed
# ?timeout= is 400 invalid_timeout while a Prefer the server cannot read is ignored; '0' removes a
# policy's own limit.
# Runs alone: its time limits are measured on the wall clock.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(time);

my $qg = QuerygateTest->start(name => 'timeouts',
	conf => "querygate.statement_timeout = '20s'\nquerygate.allow_writes = on\n");
my $F = QuerygateTest::timeouts(1);
$qg->sql(q{
	CREATE TABLE to_t (id int PRIMARY KEY, n int NOT NULL DEFAULT 0);
	INSERT INTO to_t VALUES (1);
	SELECT querygate.save_query('to_sleep', 'SELECT pg_sleep(:s::float8) IS NULL AS slept');
	SELECT querygate.save_query('to_write', 'UPDATE to_t SET n = n + 1 WHERE id = 1 AND pg_sleep(:s::float8) IS NOT NULL');
});
$qg->role('to_role', select => ['to_t']);
$qg->sql('GRANT UPDATE ON to_t TO to_role');
my $key = $qg->access(policy => 'to_pol', run_as => 'to_role', queries => [qw(to_sleep to_write)],
	setup => q{SELECT querygate.grant_writes('to_pol', '{update}');});

# The answer and how long it took, in seconds.
sub timed
{
	my ($path, %o) = @_;
	my $t0 = time();
	# A write is never a GET's: it is POSTed with its parameters in the query string.
	my $res = $o{body} || $path =~ m{^/q/to_write} ? $qg->post($path, $o{body}, key => $key, headers => $o{headers} // {})
	  : $qg->get($path, key => $key, headers => $o{headers} // {});
	return ($res, time() - $t0);
}

sub timed_out
{
	my ($res, $took, $limit, $name) = @_;
	$qg->expect_error($res, 504, 'query_timeout', "$name: 504");
	like($res->{json}{error} // '', qr/\($limit ms\)/, "$name: the message says the limit ($limit ms)");
	cmp_ok($took, '<', 5 * $F, "$name: answered well before the query would end ($took s)");
}

# --- the server's limit alone
my ($res, $took) = timed('/q/to_sleep?s=0.05');
is($res->{status}, 200, 'a short call under the server limit: 200');

# --- the caller's
($res, $took) = timed('/q/to_sleep?s=30&timeout=0.3');
timed_out($res, $took, 300, '?timeout=0.3');
($res, $took) = timed('/q/to_sleep', body => { params => { s => 30 }, timeout => 0.3 });
timed_out($res, $took, 300, '"timeout": 0.3 in a POST body');
($res, $took) = timed('/q/to_sleep?s=30', headers => { Prefer => 'return=minimal, timeout=0.3' });
timed_out($res, $took, 300, 'Prefer: timeout=0.3');
($res, $took) = timed('/q/to_sleep?s=30&timeout=0.3', headers => { Prefer => 'timeout=10' });
timed_out($res, $took, 300, '?timeout= wins over Prefer');
($res, $took) = timed('/q/to_sleep?s=0.05', headers => { Prefer => 'timeout=soon' });
is($res->{status}, 200, 'a Prefer: timeout the server cannot read is ignored');
for my $bad ('abc', '0', '-1', '0.0001', '1.', '99999999', '1e3')
{
	$qg->expect_error((timed("/q/to_sleep?s=0&timeout=$bad"))[0], 400, 'invalid_timeout', "?timeout=$bad");
}
$qg->expect_error((timed('/q/to_sleep', body => { params => { s => 0 }, timeout => '1' }))[0], 400,
	'invalid_timeout', '"timeout": "1" (a string) in a body');

# --- the policy's
$qg->sql(q{SELECT querygate.set_policy('to_pol', statement_timeout => '400 ms')});
is($qg->sql(q{SELECT statement_timeout FROM querygate.policies WHERE name = 'to_pol'}), '00:00:00.4',
	'the policies view shows the limit');
($res, $took) = timed('/q/to_sleep?s=30');
timed_out($res, $took, 400, "the policy's 400 ms");
($res, $took) = timed('/q/to_sleep?s=30&timeout=10');
timed_out($res, $took, 400, 'a caller cannot lengthen the policy\'s limit');
($res, $took) = timed('/q/to_sleep?s=30&timeout=0.2');
timed_out($res, $took, 200, 'but can shorten it');

# --- the server's bounds them all
$qg->set_and_reload('querygate.statement_timeout', '250ms');
ok(QuerygateTest::poll_until(sub { (timed('/q/to_sleep?s=30'))[0]{content} =~ /\(250 ms\)/ }),
	"the server's 250 ms is shorter than the policy's 400 ms: it applies");
$qg->set_and_reload('querygate.statement_timeout', '20s');
ok(QuerygateTest::poll_until(sub { (timed('/q/to_sleep?s=30'))[0]{content} =~ /\(400 ms\)/ }),
	"back to the policy's");

# --- a write handed to a write helper keeps the caller's limit, and rolls back
my $n = $qg->sql('SELECT n FROM to_t WHERE id = 1');
($res, $took) = timed('/q/to_write?s=30&timeout=0.3');
timed_out($res, $took, 300, 'a write with ?timeout=0.3');
is($qg->sql('SELECT n FROM to_t WHERE id = 1'), $n, 'and it left nothing written');
($res, $took) = timed('/q/to_write?s=0');
is($res->{content}, '{"rows_affected":1}', 'a quick write still succeeds');

# --- '0' removes the policy's own; a negative one is refused
$qg->sql(q{SELECT querygate.set_policy('to_pol', statement_timeout => '0')});
is($qg->sql(q{SELECT statement_timeout IS NULL FROM querygate.policies WHERE name = 'to_pol'}), 't',
	"statement_timeout => '0' removes it");
($res, $took) = timed('/q/to_sleep?s=0.6');
is($res->{status}, 200, 'and a call of 0.6 s runs again');
like(QuerygateTest::sql_error($qg, q{SELECT querygate.set_policy('to_pol', statement_timeout => '-1 s')}),
	qr/must not be negative/, 'a negative limit is refused');

done_testing();
