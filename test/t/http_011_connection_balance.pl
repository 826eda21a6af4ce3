# Connections go to the worker holding the fewest (src/http/accept_gate.hpp): a burst of keep-alive
# connections is shared out evenly, a busy worker never makes a new connection wait for its call,
# and a worker out of file descriptors pauses accepting instead of spinning, then recovers.
# Runs alone: it measures how connections are shared out between workers, which another
# suite's load on the same cores would skew.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use QuerygateTest;

# Sockets a process holds (listening socket included), from /proc: the tests and the workers run
# as the same user.
sub sockets_of
{
	my ($pid) = @_;
	opendir(my $dh, "/proc/$pid/fd") or return -1;
	my $n = grep { (readlink("/proc/$pid/fd/$_") // '') =~ /^socket:/ } readdir($dh);
	closedir $dh;
	return $n;
}

# CPU time of a process so far, in clock ticks (utime + stime).
sub cpu_ticks
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return -1;
	my $stat = <$fh>;
	close $fh;
	my @f = split / /, substr($stat, rindex($stat, ')') + 2);
	return $f[11] + $f[12];
}

# Sends a GET on a raw connection (unless no_send) and returns the response's status code.
sub exchange
{
	my ($sock, $path, $timeout, %o) = @_;
	syswrite($sock, "GET $path HTTP/1.1\r\nHost: test\r\n\r\n") unless $o{no_send};
	return (read_response($sock, $timeout))[0];
}

# The worker runs its reads (querygate.slow_call_threshold = 0): a slow one holds it, which is
# what this test needs; slow reads in helpers: limits_073_slow_calls.pl.
my $qg = QuerygateTest->start(name => 'balance', workers => 2,
	conf => "querygate.statement_timeout = '60s'\nquerygate.slow_call_threshold = 0\n");
$qg->sql(q{SELECT querygate.save_query('sleep', 'SELECT pg_sleep(:s::float8)::text AS slept')});
my $key = $qg->access(run_as => $qg->role('api_sleeper'), queries => ['sleep']);
my @workers = @{ $qg->worker_pids };
is(scalar @workers, 2, 'two workers');
my %base = map { $_ => sockets_of($_) } @workers;

# Holds per worker beyond its baseline, polled until they add up to $want (MHD may still be
# registering the last one).
sub held
{
	my ($want) = @_;
	my @h;
	poll_until(sub {
		@h = map { sockets_of($_) - $base{$_} } @workers;
		my $sum = 0;
		$sum += $_ for @h;
		return $sum == $want;
	});
	return @h;
}

# 1. A burst: eight connections opened at once, then one request on each.
my @burst = map { $qg->connect_raw } 1 .. 8;
my @codes = map { exchange($_, '/health', 10) } @burst;
is(join(',', @codes), join(',', ('200') x 8), 'the burst: every connection answered');
my @h = held(8);
note('connections per worker after a burst of 8: ' . join('/', @h));
# Both workers wake for the burst; the one holding more leaves each connection 1 ms for the other,
# so a worker descheduled for longer can end up with one or two more (4/4 and 5/3 seen here).
# Under Valgrind (20 times slower) 1 ms is nothing: the first worker awake takes the burst.
SKIP:
{
	skip 'the 1 ms preference is a matter of time, which Valgrind stretches', 1
	  if $QuerygateTest::TIME_FACTOR >= 10;
	ok($h[0] >= 2 && $h[1] >= 2, 'the burst is shared out: neither worker holds more than 6 of 8 ('
		  . join('/', @h) . ')');
}
close $_ for @burst;
held(0);

# 2. One at a time, each answered before the next is opened: the counts never differ by more
# than one, so the eight alternate.
my @steady;
for (1 .. 8)
{
	my $s = $qg->connect_raw;
	exchange($s, '/health', 10);
	push @steady, $s;
}
@h = held(8);
note('connections per worker after 8 sequential connections: ' . join('/', @h));
ok($h[0] >= 3 && $h[1] >= 3, 'sequential connections are shared out (' . join('/', @h) . ')');
close $_ for @steady;
held(0);

# 3. One worker busy with a 4 s call: new connections are answered by the other at once, even
# after it holds more connections than the busy one (balance is a preference, not a wait).
my $slow = $qg->connect_raw;
syswrite($slow, "GET /q/sleep?s=4 HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n\r\n");
usleep(300_000);
my $t0 = time();
my @fresh;
for (1 .. 4)
{
	my $s = $qg->connect_raw;
	my $code = exchange($s, '/health', 10);
	push @fresh, [ $code, time() - $t0 ];
	push @steady, $s;    # kept open, so the idle worker holds more than the busy one
}
my $slowest = 0;
$slowest = $_->[1] > $slowest ? $_->[1] : $slowest for @fresh;
is(join(',', map { $_->[0] } @fresh), '200,200,200,200', 'four new connections answered during the call');
cmp_ok($slowest, '<', 3, sprintf('none waited for the 4 s call (the last was answered after %.2f s)', $slowest));
is(exchange($slow, '', 10, no_send => 1), '200', 'the slow call itself completes');
close $_ for @steady, $slow;
held(0);

# 4. Out of file descriptors. One worker is kept busy with a long call, so new connections can
# only reach the other, whose open-file limit is then lowered to just above what it uses.
my $node = $qg->node;
my $log_offset = -s $node->logfile;
my $busy_conn = $qg->connect_raw;
syswrite($busy_conn, "GET /q/sleep?s=30 HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n\r\n");
my @before = held(1);
my ($busy, $victim) = $before[0] ? @workers : reverse @workers;
# The limit that leaves exactly two descriptor numbers free (earlier connections left gaps).
my %open = map { $_ => 1 } do { opendir(my $dh, "/proc/$victim/fd"); grep { /^\d+$/ } readdir($dh) };
my ($limit, $free) = (0, 0);
while ($free < 2)
{
	$free++ unless $open{$limit};
	$limit++;
}
system('prlimit', "--pid=$victim", "--nofile=$limit:") == 0 or BAIL_OUT('prlimit failed');
my @pending = map { $qg->connect_raw } 1 .. 8;
syswrite($_, "GET /health HTTP/1.1\r\nHost: test\r\n\r\n") for @pending;
my @early = map { exchange($_, '', 1, no_send => 1) eq '200' ? 1 : 0 } @pending;
my $answered = grep { $_ } @early;
cmp_ok($answered, '<', 8, "with the limit, some connections wait ($answered of 8 answered)");
my $c0 = cpu_ticks($victim);
sleep 2;
my $spent = cpu_ticks($victim) - $c0;
cmp_ok($spent, '<', 40, "the worker does not spin while it cannot accept ($spent ticks in 2 s)");
my $log = slurp_file($node->logfile, $log_offset);
my $lines = () = $log =~ /querygate http worker cannot accept connections: Too many open files/g;
is($lines, 1, 'the shortage is logged once, not once per attempt');

system('prlimit', "--pid=$victim", '--nofile=1024:') == 0 or BAIL_OUT('prlimit failed');
my $late = 0;
for my $i (0 .. $#pending)
{
	$late++ if !$early[$i] && exchange($pending[$i], '', 10, no_send => 1) eq '200';
}
is($answered + $late, 8,
	'once descriptors are free again, every waiting connection is answered (the other worker still busy)');
$qg->sql("SELECT pg_cancel_backend($busy)");
# Cancelled well before querygate.statement_timeout (60s): not a timeout, an error of the query.
my ($cancelled, $cancelled_body) = read_response($busy_conn, 10);
is("$cancelled " . ((json_decode($cancelled_body) // {})->{code} // '(none)'), '500 query_failed',
	'the cancelled long call answers 500 query_failed');
close $_ for @pending, $busy_conn;
is_deeply($qg->worker_pids, \@workers, 'both workers are the same processes');

done_testing();
