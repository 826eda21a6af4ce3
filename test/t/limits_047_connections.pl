# Connections that misbehave (src/shmem/connection_counts.hpp, src/http/connection_deadlines.hpp),
# over real sockets from test/hostile/connection_flood.py: a flood of idle connections from one
# address holds querygate.max_connections_per_ip of them, counted across both workers, and the
# rest are answered 503 too_many_connections (with Retry-After) and closed, while a caller from
# another address is served at once; with no per-address limit 5,000 idle connections are held
# (each worker raised its open-file limit to the hard limit) and callers are still served, from
# that address too; connections that send a byte every half second (slowloris) are closed at
# querygate.request_timeout from their opening, which the bytes do not move; a keep-alive
# connection that sends nothing after its answer is closed after querygate.idle_timeout, one that
# pauses longer than the request timeout is still served, and a request line starts the request
# timeout for the headers behind it;
# querygate.max_connections bounds them all; and the counts of a worker that is terminated go
# with it.
# Runs alone: its deadlines are seconds of idle or slow connections, measured on the wall
# clock.
use strict;
use warnings;
use FindBin;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use IO::Select;
use Time::HiRes qw(sleep time);

my $qg = QuerygateTest->start(name => 'connections', workers => 2,
	conf => "querygate.request_timeout = '3s'\nquerygate.idle_timeout = '2s'\n");
$qg->sql(q{SELECT querygate.save_query('cn_one', 'SELECT 1 AS one')});
$qg->role('cn_reader');
my $key = $qg->access(policy => 'cn_pol', run_as => 'cn_reader', queries => ['cn_one'], key => 'cn_key');
my $script = "$FindBin::Bin/../hostile/connection_flood.py";
my $F = QuerygateTest::timeouts(1);

# Runs the flood helper; returns its result.
sub flood
{
	my (%o) = @_;
	my @args = ('python3', $script, '--port', $qg->port, '--count', $o{count}, '--hold', $o{hold},
		'--probe-path', '/q/cn_one', '--probe-key', $key,
		'--probe-source', $o{probe_source} // '127.0.0.2');
	push @args, '--trickle', $o{trickle} if $o{trickle};
	my ($out, $err) = ('', '');
	IPC::Run::run(\@args, '>', \$out, '2>', \$err) or die "connection_flood.py failed: $err";
	note("flood: $out");
	return decode_json($out);
}

sub worker_sum
{
	my ($column) = @_;
	return $qg->sql("SELECT sum($column) FROM querygate.stat_workers");
}

sub connections_of_workers
{
	return $qg->sql(q{SELECT string_agg(connections::text, ',' ORDER BY worker) FROM querygate.stat_workers});
}

# ---- each worker's open-file limit is its hard limit
for my $pid (@{ $qg->worker_pids })
{
	my ($soft, $hard) = slurp_file("/proc/$pid/limits") =~ /^Max open files\s+(\d+)\s+(\d+)/m;
	is($soft, $hard, "worker $pid: its soft open-file limit is raised to the hard limit ($hard)");
}

# ---- one address over querygate.max_connections_per_ip (1000 by default)
my $refused_before = worker_sum('connections_refused');
my $r = flood(count => 1500, hold => 1);
is($r->{failed_to_connect}, 0, '1,500 connections from 127.0.0.1 are made');
is($r->{opened}, 1000, 'querygate.max_connections_per_ip (1000) of them are held');
is_deeply($r->{refused}, { '503 too_many_connections' => 500 },
	'the other 500 are answered 503 too_many_connections, with Retry-After, and closed');
is_deeply($r->{probe}{statuses}, [ (200) x 5 ], 'meanwhile a caller from 127.0.0.2 is served');
cmp_ok($r->{probe}{slowest_ms}, '<', 100 * $F, 'in under 100 ms (times the test time factor)');
ok(QuerygateTest::poll_until(sub { worker_sum('connections_refused') - $refused_before == 500 }),
	'querygate.stat_workers counts the 500 refused connections');

# Across both workers: the address's connections are spread over them and counted together.
my $r2;
{
	my $h = IPC::Run::start([ 'python3', $script, '--port', $qg->port, '--count', 1000, '--hold', 4 * $F,
			'--probes', 0 ], '>', \my $out, '2>', \my $err);
	ok(QuerygateTest::poll_until(sub { my $c = connections_of_workers(); my $s = 0; $s += $_ for split /,/, $c; $s >= 1000 }, 10),
		'1,000 connections of one address are open');
	my @per = split /,/, connections_of_workers();
	cmp_ok($per[$_], '>', 0, "worker " . ($_ + 1) . " holds some of them ($per[$_])") for 0 .. 1;
	$r2 = flood(count => 10, hold => 0.5);
	$h->finish;
}
is($r2->{opened}, 0, 'a connection more from that address, to whichever worker, is refused');
is_deeply($r2->{refused}, { '503 too_many_connections' => 10 }, 'each with 503 too_many_connections');

# ---- the request deadline: idle and trickling connections are closed at querygate.request_timeout
my $timed_out_before = worker_sum('connections_timed_out');
$r = flood(count => 300, hold => 8, trickle => 0.5);
is($r->{opened}, 300, '300 connections that send a byte every half second (slowloris)');
is($r->{closed}{count}, 300, 'every one is closed by the server');
cmp_ok($r->{closed}{min_s}, '>=', 2.5, 'not before querygate.request_timeout (3 s)');
cmp_ok($r->{closed}{max_s}, '<', 3 + 2 * $F, 'and at most a moment after it: the bytes do not extend it');
is_deeply($r->{probe}{statuses}, [ (200) x 5 ], 'meanwhile callers are served');
ok(QuerygateTest::poll_until(sub { worker_sum('connections_timed_out') - $timed_out_before == 300 }),
	'querygate.stat_workers counts the 300 connections closed at their deadline');

# ---- no per-address limit: 5,000 idle connections are held, and callers are still served
$qg->set_and_reload('querygate.max_connections_per_ip', '0');
$r = flood(count => 5000, hold => 5, probe_source => '127.0.0.1');
is($r->{failed_to_connect}, 0, '5,000 idle connections from one address');
is($r->{opened}, 5000, 'all held: no descriptor limit stops them');
is_deeply($r->{probe}{statuses}, [ (200) x 5 ], 'a caller from that same address is served meanwhile');
cmp_ok($r->{probe}{slowest_ms}, '<', 100 * $F, 'in under 100 ms (times the test time factor)');
is($r->{closed}{count}, 5000, 'and every one is closed once its request deadline passes');

# ---- a keep-alive connection idle after its answer: closed after querygate.idle_timeout
$qg->set_and_reload('querygate.request_timeout', '30s');
{
	my $sock = $qg->connect_raw;
	print $sock "GET /q/cn_one HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n";
	my ($status) = QuerygateTest::read_response($sock, 10 * $F);
	is($status, '200', 'a call on a keep-alive connection');
	my $t0 = time();
	my $rest = QuerygateTest::read_until_close($sock, 20 * $F);
	my $idle = time() - $t0;
	is($rest, '', 'then nothing is sent');
	cmp_ok($idle, '>=', 1.5, 'the idle connection stays up to querygate.idle_timeout (2 s)');
	cmp_ok($idle, '<', 2 + 3 * $F, 'and is closed after it, well before the request deadline (30 s)');
}

# ---- querygate.max_connections bounds every connection (a restart sets it)
$qg->node->append_conf('postgresql.conf', "querygate.max_connections = 300\n");
$qg->node->restart;
$qg->wait_health;
$r = flood(count => 400, hold => 1);
is($r->{opened}, 300, 'querygate.max_connections (300) connections are held');
is_deeply($r->{refused}, { '503 too_many_connections' => 100 }, 'the rest get 503 too_many_connections');
is_deeply($r->{probe}{statuses}, [ (503) x 5 ], 'and so does any other caller while they are open');
ok(QuerygateTest::poll_until(sub { QuerygateTest::fresh_request($qg, 'GET', '/health')->{status} == 200 }),
	'once they have gone, callers are served');

# ---- a terminated worker's counts go with it
$qg->set_and_reload('querygate.max_connections_per_ip', '100');
$qg->node->append_conf('postgresql.conf', "querygate.max_connections = 10000\n");
$qg->node->restart;
$qg->wait_health;
{
	my $h = IPC::Run::start([ 'python3', $script, '--port', $qg->port, '--count', 100, '--hold', 30,
			'--probes', 0 ], '>', \my $out, '2>', \my $err);
	ok(QuerygateTest::poll_until(sub { my $s = 0; $s += $_ for split /,/, connections_of_workers(); $s >= 100 }, 10),
		'100 connections of one address are open (its limit)');
	my $before = join ',', @{ $qg->worker_pids };
	$qg->sql(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'querygate http worker'});
	ok(QuerygateTest::poll_until(sub {
				my $now = join ',', @{ $qg->worker_pids };
				$now ne $before && scalar(@{ $qg->worker_pids }) == 2
				  && QuerygateTest::fresh_request($qg, 'GET', '/health')->{status} == 200 }),
		'both workers are terminated (their connections closed) and start again');
	$h->kill_kill;
	$h->finish;
}
# (The test's own calls above came from 127.0.0.1 too, each on a connection it closed.)
ok(QuerygateTest::poll_until(sub { connections_of_workers() eq '0,0' }), 'no connection is open');
$r = flood(count => 100, hold => 0.5);
is($r->{opened}, 100, 'the address can open its 100 again: the dead workers\' counts are gone');

# ---- keep-alive: a pause between requests is the idle timeout's; a request line starts the
# request deadline, which a trickle of headers does not extend
$qg->set_and_reload('querygate.request_timeout', '1s');
$qg->set_and_reload('querygate.idle_timeout', '5s');
$qg->node->restart;
$qg->wait_health;
{
	local $SIG{PIPE} = 'IGNORE';
	my $sock = $qg->connect_raw;
	my $call = "GET /q/cn_one HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n";
	print $sock $call;
	is((QuerygateTest::read_response($sock, 10 * $F))[0], '200', 'a call on a keep-alive connection');
	sleep 2.5;
	print $sock $call;
	is((QuerygateTest::read_response($sock, 10 * $F))[0], '200',
		'after a pause longer than querygate.request_timeout (1 s), shorter than idle_timeout (5 s), the next call is served');
	print $sock "GET /q/cn_one HTTP/1.1\r\n";
	my $t0 = time();
	my $sel = IO::Select->new($sock);
	my ($closed, $rest) = (undef, '');
	while (time() - $t0 < 10 * $F)
	{
		if ($sel->can_read(0.2))
		{
			my $n = sysread($sock, my $buf, 4096);
			$rest .= $buf if $n;
			if (!$n) { $closed = time() - $t0; last; }
		}
		print $sock 'X';
	}
	ok(defined $closed, 'a request whose headers trickle in a byte every 0.2 s is closed');
	is($rest, '', 'with no answer');
	cmp_ok($closed // 0, '>=', 0.8, 'not before querygate.request_timeout from its request line');
	cmp_ok($closed // 99, '<', 1 + 2 * $F, 'and at most a moment after it');
}

done_testing();
