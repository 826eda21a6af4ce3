# Calls that fail in the database give back everything they took, on one worker: thousands of
# calls whose parameter its type refuses (an error while binding) and whose query fails as it runs
# (division by zero), and a few past their statement timeout, leave the worker's TopMemoryContext
# where it was after the first such calls. Each error is copied out of PostgreSQL's error state
# (src/pg/pg_guard.cpp); PostgreSQL 15.20's CopyErrorData copies strings its FreeErrorData does not
# free, which had left about 200 bytes behind every failed call (64 MB in bench/soak's ten minutes).
# The size is PostgreSQL's own count (pg_log_backend_memory_contexts), not the process's resident
# memory, so neither the allocator nor a sanitizer's quarantine moves it.
use strict;
use warnings;
use FindBin;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'failed_calls_memory', workers => 1,
	conf => "querygate.statement_timeout = '50ms'\nquerygate.history = off\n"
	  # The worker runs its reads: its own memory is what is measured.
	  . "querygate.slow_call_threshold = 0\n");
my $F = QuerygateTest::timeouts(1);
$qg->sql(q{
	SELECT querygate.save_query('fm_uuid', 'SELECT :id::uuid AS u');
	SELECT querygate.save_query('fm_divide', 'SELECT 1 / (:id::int - :id::int) AS x');
	SELECT querygate.save_query('fm_slow', 'SELECT :id::int AS id, pg_sleep(1) IS NULL AS slept');
});
$qg->role('fm_role');
my $key = $qg->access(policy => 'fm_pol', run_as => 'fm_role', queries => [qw(fm_uuid fm_divide fm_slow)],
	key => 'fm_key');
my ($pid) = @{ $qg->worker_pids };
my $script = "$FindBin::Bin/../hostile/call_stream.py";

# Calls of $path for $seconds over 4 keep-alive connections; returns how many got $code.
sub failing_calls
{
	my ($path, $seconds, $code) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'python3', $script, '--port', $qg->port, '--key', $key, '--path', $path,
			'--threads', 4, '--duration', $seconds * $F, '--timeout', 30 * $F ], '>', \$out, '2>', \$err)
	  or die "call_stream.py failed: $err";
	my $r = decode_json($out);
	is(scalar(@{ $r->{answered} }), 0, "$path: no call succeeds");
	is_deeply([ keys %{ $r->{codes} } ], [$code], "$path: every call fails with $code");
	return $r->{codes}{$code} // 0;
}

# The bytes TopMemoryContext holds in the worker, as PostgreSQL logs them.
sub top_memory_used
{
	my $offset = -s $qg->node->logfile;
	$qg->sql("SELECT pg_log_backend_memory_contexts($pid)");
	$qg->node->wait_for_log(qr/\[$pid\] LOG:  level: 0; TopMemoryContext: .* (\d+) used/, $offset);
	my ($used) = substr(slurp_file($qg->node->logfile), $offset)
	  =~ /\[$pid\] LOG:  level: 0; TopMemoryContext: .* (\d+) used/;
	return $used;
}

sub all_kinds
{
	my $calls = failing_calls('/q/fm_uuid', 2, 'param_invalid');
	$calls += failing_calls('/q/fm_divide', 2, 'query_failed');
	$calls += failing_calls('/q/fm_slow', 0.5, 'query_timeout');
	return $calls;
}

all_kinds(); # the worker's caches and PostgreSQL's own are filled by the first of each
my $before = top_memory_used();
my $calls = all_kinds();
my $after = top_memory_used();
note("TopMemoryContext: $before bytes used before $calls failed calls, $after after");
cmp_ok($calls, '>', 1000, "over a thousand failed calls ($calls)");
cmp_ok($after - $before, '<', 32 * 1024,
	'TopMemoryContext grew by less than 32 kB over them (' . ($after - $before) . ' bytes; 200 a call before the fix)');
is(QuerygateTest::fresh_request($qg, 'GET', '/q/fm_uuid?id=8c4a2a6e-9f5e-4a3b-9d1e-0f3a9c1b2d4e', key => $key)->{status},
	200, 'and the next good call is served');

done_testing();
