# Shedding by waiting time (src/http/overload_gate.hpp), on one worker serving a 30 ms query to
# 20 clients in a closed loop (test/hostile/call_stream.py), so that every request would wait
# about 0.6 s behind the others: with querygate.overload_target = 50 ms, requests that waited
# that long are answered 503 overloaded with Retry-After, every call is answered, and the calls
# served waited far less than without the gate; once the load stops, the next call is served at
# once; with the target at 0 nothing is refused.
# Runs alone: it sheds by waiting time, which another suite's load on the same cores changes.
use strict;
use warnings;
use FindBin;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(sleep);

my $qg = QuerygateTest->start(name => 'overload', workers => 1,
	conf => "querygate.overload_target = '50ms'\nquerygate.overload_interval = '200ms'\n"
	  . "querygate.statement_timeout = '60s'\n"
	  # The worker runs its reads: its queue of 30 ms calls is what it sheds (slow reads in
	  # helpers: limits_073_slow_calls.pl).
	  . "querygate.slow_call_threshold = 0\n");
my $F = QuerygateTest::timeouts(1);
$qg->sql(q{SELECT querygate.save_query('ov_slow', 'SELECT :id::int AS id, pg_sleep(0.03) IS NULL AS slept')});
$qg->role('ov_role');
my $key = $qg->access(policy => 'ov_pol', run_as => 'ov_role', queries => ['ov_slow'], key => 'ov_key');
my $script = "$FindBin::Bin/../hostile/call_stream.py";

sub stream
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'python3', $script, '--port', $qg->port, '--key', $key, '--path', '/q/ov_slow',
			'--threads', 20, '--duration', 4 * $F, '--timeout', 30 * $F ], '>', \$out, '2>', \$err)
	  or die "call_stream.py failed: $err";
	my $r = decode_json($out);
	note('stream: ' . scalar(@{ $r->{answered} }) . ' served, statuses ' . encode_json($r->{statuses})
		  . ', codes ' . encode_json($r->{codes}) . ', latency ' . encode_json($r->{latency_ms}));
	return $r;
}

my $on = stream();
cmp_ok($on->{codes}{overloaded} // 0, '>', 0, 'requests that waited past the target are answered 503 overloaded');
is_deeply([ keys %{ $on->{statuses} } ], ['503'], 'and nothing else is refused');
is($on->{retry_after}, $on->{codes}{overloaded} // 0, 'each with Retry-After');
is($on->{failed}, 0, 'every call is answered');
cmp_ok(scalar(@{ $on->{answered} }), '>', 0, 'calls are served');
sleep 0.5; # more than an interval with nothing refused
is(QuerygateTest::fresh_request($qg, 'GET', '/q/ov_slow?id=1', key => $key)->{status}, 200,
	'once the load stops, the next call is served');

$qg->set_and_reload('querygate.overload_target', '0');
sleep $F; # the reload reaches the worker asynchronously
my $off = stream();
is_deeply($off->{statuses}, {}, 'with querygate.overload_target = 0 nothing is refused');
my ($p50_on, $p50_off) = ($on->{latency_ms}{200}{p50}, $off->{latency_ms}{200}{p50});
cmp_ok($p50_on * 3, '<', $p50_off,
	"the calls served waited far less with the gate (p50 $p50_on ms) than without it ($p50_off ms)");

done_testing();
