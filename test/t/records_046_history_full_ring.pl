# A full history ring (src/shmem/history_ring.hpp) drops records and counts them, and no call waits
# for it. With querygate.history_buffer at its minimum (64 records, 32 for each of the two workers'
# rings) and the writer process stopped (SIGSTOP, while it waits between passes), 200 calls on one
# connection (so one worker answers them all) answer at once; that worker's ring keeps exactly the
# first 32 of them and drops the other 168, counted in querygate.stat_history and in
# querygate_history_dropped_total; once the writer runs again it saves exactly those 32.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use QuerygateTest;

my $token = 'full-ring-metrics-token';
my $qg = QuerygateTest->start(name => 'full_ring', workers => 2, metrics_token => $token,
	conf => "querygate.history_buffer = 64\nquerygate.history_flush_interval = 100\n");
$qg->sql(q{
	CREATE TABLE fr_items (id int PRIMARY KEY, label text NOT NULL);
	INSERT INTO fr_items SELECT g, 'item ' || g FROM generate_series(1, 10) g;
	SELECT querygate.save_query('fr_item', 'SELECT id, label FROM fr_items WHERE id = :id');
});
$qg->role('fr_reader', select => ['fr_items']);
my $key = $qg->access(policy => 'fr_pol', run_as => 'fr_reader', queries => ['fr_item']);

sub stats
{
	my ($buffered, $written, $dropped) =
	  split /\|/, $qg->sql(q{SELECT concat_ws('|', buffered, written, dropped) FROM querygate.stat_history});
	return { buffered => $buffered, written => $written, dropped => $dropped };
}

# A few calls first, saved as usual: the ring is then empty, and the writer waits between passes.
$qg->get("/q/fr_item?id=$_", key => $key) for 1 .. 3;
ok(QuerygateTest::poll_until(sub { my $s = stats(); $s->{written} == 3 && $s->{buffered} == 0 }),
	'before: three calls written, nothing buffered');
# A minute between passes, so that the writer is stopped while it waits, never inside a pass.
$qg->sql(q{ALTER SYSTEM SET querygate.history_flush_interval = 60000; SELECT pg_reload_conf()});
sleep 2; # the wait already running ends at the old interval

my $writer = $qg->sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'querygate writer'});
like($writer, qr/^\d+$/, 'the writer process is found');
my $stopped = kill('STOP', $writer);
END { kill('CONT', $writer) if $stopped; }
is($stopped, 1, 'the writer is stopped');
my $before = stats();

my $n = 200;
my $ring = 64 / 2; # querygate.history_buffer, shared out among the workers
my $client = $qg->new_client;
my ($answered, $slowest) = (0, 0);
my @ids;
for my $i (1 .. $n)
{
	my $id = "full-ring-$i";
	push @ids, $id;
	my $t0 = time;
	my $res = $qg->get('/q/fr_item?id=' . (1 + $i % 10), key => $key, client => $client,
		headers => { 'X-Request-Id' => $id });
	my $took = time - $t0;
	$slowest = $took if $took > $slowest;
	$answered++ if $res->{status} == 200;
}
is($answered, $n, "all $n calls answer while the writer is stopped");
cmp_ok($slowest, '<', QuerygateTest::timeouts(2), 'none waited for the history (slowest call in seconds)');

my $full = stats();
is($full->{buffered}, $ring, "the worker's ring holds exactly its $ring records");
is($full->{dropped} - $before->{dropped}, $n - $ring, 'the other ' . ($n - $ring) . ' are dropped and counted');
my $metrics = $qg->get('/metrics', bearer => $token);
my ($exported) = ($metrics->{content} // '') =~ /^querygate_history_dropped_total (\d+)$/m;
is($exported, $full->{dropped}, '/metrics says the same count');

kill('CONT', $writer);
$stopped = 0;
$qg->sql(q{ALTER SYSTEM RESET querygate.history_flush_interval; SELECT pg_reload_conf()});
ok(QuerygateTest::poll_until(sub { stats()->{buffered} == 0 }), 'the writer, running again, empties the ring');
my $after = stats();
is($after->{written} - $before->{written}, $ring, "it wrote the $ring records the ring held");
my $list = join(',', map { QuerygateTest::sql_quote($_) } @ids);
is($qg->sql("SELECT count(*) FROM querygate.history WHERE request_id IN ($list)"), $ring,
	"querygate.history has $ring of the calls");
is($qg->sql("SELECT string_agg(request_id, ',' ORDER BY request_id COLLATE \"C\") = "
		  . QuerygateTest::sql_quote(join(',', sort @ids[0 .. $ring - 1]))
		  . " FROM querygate.history WHERE request_id IN ($list)"), 't',
	"the first $ring calls: a full ring keeps what it holds and drops what comes after");
is($after->{dropped}, $full->{dropped}, 'nothing more was dropped');

done_testing();
