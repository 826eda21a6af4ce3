# An HTTP address in use when the server starts (another program holds it, or a restart's previous
# postmaster is still exiting with it open) does not leave querygate off until the next restart:
# the server starts with a WARNING that HTTP waits for its address, every querygate process runs
# (the HTTP workers, the writer), a stop while waiting is prompt, and once the address is free the
# workers listen and serve within moments, with no restart. make run on a port that is taken stops
# at once and says which variable moves it.
use strict;
use warnings;
use FindBin;
use IO::Socket::INET;
use IPC::Run ();
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(time);

my $qg = QuerygateTest->start(name => 'inuse', workers => 2);
my $node = $qg->node;
$qg->sql(q{SELECT querygate.save_query('iu_q', 'SELECT 42 AS answer')});
my $key = $qg->access(policy => 'iu_pol', run_as => $qg->role('iu_role'), queries => ['iu_q']);
$qg->expect_rows($qg->get('/q/iu_q', key => $key), [ { answer => 42 } ], 'before');

# Another program listens on querygate's address (127.0.0.1, the default) and port. Tried until
# it can: under Valgrind the stopped server's postmaster holds the address for a few seconds after
# pg_ctl has seen it stop (the case this test is about).
sub hold_address
{
	my $s;
	QuerygateTest::poll_until(
		sub {
			$s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $qg->port,
				Proto => 'tcp', Listen => 5, ReuseAddr => 1);
		});
	die "could not listen on 127.0.0.1:" . $qg->port . ": $!" unless $s;
	return $s;
}

# The querygate processes running, by type, as "type=count,...".
sub processes
{
	return $qg->sql(q{SELECT string_agg(backend_type || '=' || n, ',' ORDER BY backend_type)
		FROM (SELECT backend_type, count(*) AS n FROM pg_stat_activity
		      WHERE backend_type LIKE 'querygate%' GROUP BY backend_type) t});
}
my $all = 'querygate http worker=2,querygate wal flusher=1,querygate writer=1';

$node->stop;
my $holder = hold_address();
my $offset = -s $node->logfile;
$node->start;
like(slurp_file($node->logfile, $offset),
	qr/WARNING:  querygate HTTP waits for its address: could not listen on 127\.0\.0\.1:\d+: Address already in use/,
	'the server starts, with a WARNING that HTTP waits for its address');
ok(QuerygateTest::poll_until(sub { processes() eq $all }),
	'every querygate process runs while the address is held (' . processes() . ')');
# Polled: a worker trying its bind between two waits shows no wait event for that moment.
my $waiting = sub {
	$qg->sql(q{SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'querygate http worker' AND wait_event = 'Extension'});
};
ok(QuerygateTest::poll_until(sub { $waiting->() == 2 }), 'both HTTP workers wait (' . $waiting->() . ')');

# A stop while waiting is prompt: the workers end their wait when asked to.
my $t0 = time;
$node->stop('fast');
my $stop_s = time - $t0;
cmp_ok($stop_s, '<', QuerygateTest::timeouts(10), sprintf('a fast stop while waiting ends (%.1f s)', $stop_s));

$offset = -s $node->logfile;
$node->start;
ok(QuerygateTest::poll_until(sub { processes() eq $all }), 'started again, the address still held');
close($holder);
$t0 = time;
ok($qg->wait_health, 'the address freed: GET /health answers 200, with no restart');
note(sprintf('served %.2f s after the address was freed', time - $t0));
$qg->expect_rows($qg->get('/q/iu_q', key => $key), [ { answer => 42 } ], 'after');
my $log = slurp_file($node->logfile, $offset);
like($log, qr/LOG:  querygate http worker \d listens: its address is free now/,
	'a worker logs that it listens now');
unlike($log, qr/HTTP is off/, 'HTTP was never off');

# A restart: under Valgrind the previous postmaster holds the address for a while after pg_ctl has
# seen it stop, so this is the case above again; either way it serves.
$node->restart;
ok($qg->wait_health, 'after a restart GET /health answers 200');
$qg->expect_rows($qg->get('/q/iu_q', key => $key), [ { answer => 42 } ], 'after a restart');

# make run (scripts/run-demo) on a port another program holds (here, this server's): it stops at
# once, before installing or starting anything, and names the variable that moves the port.
my $demo_dir = PostgreSQL::Test::Utils::tempdir('demo');
my ($out, $err) = ('', '');
IPC::Run::run([ "$FindBin::Bin/../../scripts/run-demo" ], '>', \$out, '2>', \$err,
	init => sub { $ENV{QUERYGATE_DEMO_HTTP_PORT} = $qg->port; $ENV{QUERYGATE_DEMO_DIR} = "$demo_dir/d"; });
is($? >> 8, 1, 'make run with its HTTP port taken: exits 1');
like($err, qr/port ${\ $qg->port } on 127\.0\.0\.1 is taken by another program: run with QUERYGATE_DEMO_HTTP_PORT=/,
	'and says so, naming the variable that moves it');
is($out, '', 'printing no key or curl line');
ok(!-e "$demo_dir/d", 'and starting nothing');

done_testing();
