# The export places (src/shmem/export_slots.hpp, src/http/file_answer.hpp): one caller, and one
# policy's callers together, hold at most querygate.caller_share of querygate.max_exports (3 of 4);
# a reader that takes nothing is closed by the idle timeout and one slower than
# querygate.export_min_rate over querygate.export_rate_window is closed, each giving its place
# back; an export costs the caller's rate limit one call per querygate.max_page_size rows.
# Runs alone: its readers are paced on the wall clock.
use strict;
use warnings;
use IO::Select;
use Socket qw(SOL_SOCKET SO_RCVBUF);
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(time sleep);

my $qg = QuerygateTest->start(name => 'export_shares', workers => 1,
	conf => "querygate.max_exports = 4\nquerygate.statement_timeout = '60s'\n"
	  . "querygate.idle_timeout = 3\nquerygate.export_min_rate = 1024\n"
	  . "querygate.export_rate_window = '1s'\n");
my $F = QuerygateTest::timeouts(1);
my $N = 300_000;
$qg->sql(qq{
	CREATE TABLE es_t (id int PRIMARY KEY, label text NOT NULL);
	INSERT INTO es_t SELECT g, repeat('x', 100) FROM generate_series(1, $N) g;
	SELECT querygate.save_query('es_all', 'SELECT id, label FROM es_t WHERE id <= :n ORDER BY id');
});
$qg->role('es_role', select => ['es_t']);
my $a = $qg->access(policy => 'es_busy', run_as => 'es_role', queries => ['es_all']);
my $a2 = $qg->access(policy => 'es_busy');
my $b = $qg->access(policy => 'es_other', run_as => 'es_role', queries => ['es_all']);

# An export's head, its connection left open and unread.
sub start_export
{
	my ($key, $n) = @_;
	my $sock = $qg->connect_raw;
	# A small window, as a slow link has: the server's sends wait on this reader, not on buffers.
	setsockopt($sock, SOL_SOCKET, SO_RCVBUF, 64 * 1024) or die "SO_RCVBUF: $!";
	syswrite($sock, "GET /q/es_all?n=" . ($n // $N) . "&stream=true&format=csv HTTP/1.1\r\n"
		  . "Host: x\r\nX-API-Key: $key\r\n\r\n");
	my ($head, $sel) = ('', IO::Select->new($sock));
	while ($head !~ /\r\n\r\n/ && $sel->can_read(30 * $F))
	{
		sysread($sock, $head, 4096, length $head) or last;
	}
	return ($sock, $head);
}

sub refused
{
	my ($key, $message, $name) = @_;
	my $res = $qg->get("/q/es_all?n=5&stream=true", key => $key);
	$qg->expect_error($res, 503, 'too_many_exports', $name);
	like($res->{content}, $message, "$name: says why");
	ok(defined $res->{headers}{'retry-after'}, "$name: with Retry-After");
}

# --- shares: 3 of the 4 places for a key, and for its policy
my @held = map { [ start_export($a) ] } 1 .. 3;
is(scalar(grep { $_->[1] =~ /^HTTP\/1\.1 200/ } @held), 3, 'a key holds three exports, unread');
refused($a, qr/this caller's exports hold its share/, 'its fourth');
refused($a2, qr/exports of this caller's policy hold its share/, 'another key of its policy');
my ($other, $other_head) = start_export($b);
like($other_head, qr/^HTTP\/1\.1 200/, 'another policy\'s key takes the fourth place');
refused($b, qr/as many exports as this server writes at once/, 'a fifth: the server\'s places');

# --- readers that take nothing: closed by the idle timeout, their places given back. The four
# started seconds apart on a slow server: each is read only once the worker holds no connection
# (this script's keep-alive one times out as well), or the last would be read to its end.
ok(QuerygateTest::poll_until(
		sub { $qg->sql('SELECT sum(connections) FROM querygate.stat_workers') == 0 }, timeouts(20)),
	'the unread exports are closed at the idle timeout');
is($qg->get('/q/es_all?n=5&stream=true', key => $a2)->{status}, 200, 'and their places given back');
for my $h (@held, [ $other ])
{
	my $rest = QuerygateTest::read_until_close($h->[0], timeouts(10));
	ok(length($rest) < 30_000_000, 'an unread export ended before its end') ;
}

# --- a reader slower than querygate.export_min_rate (1 MB/s here): closed before the end
my ($slow, $head) = start_export($b);
like($head, qr/^HTTP\/1\.1 200/, 'an export read at about 256 kB a second');
my ($len) = $head =~ /^content-length:\s*(\d+)/mi;
my $got = length($head) - index($head, "\r\n\r\n") - 4;
my ($t0, $closed, $sel) = (time(), 0, IO::Select->new($slow));
while (time() - $t0 < 60 * $F)
{
	sleep(0.25);
	next unless $sel->can_read(0);
	my $n = sysread($slow, my $buf, 64 * 1024);
	$closed = 1, last unless $n;
	$got += $n;
}
ok($closed, sprintf('the slow reader\'s connection was closed after %.1f s', time() - $t0));
cmp_ok($got, '<', $len, "before the end ($got of $len bytes)");
is($qg->get('/q/es_all?n=5&stream=true', key => $b)->{status}, 200, 'and its place was given back');

# --- an export costs one call per querygate.max_page_size (1,000) rows
my $c = $qg->access(policy => 'es_other', key_args => 'rate_per_second => 1, burst => 10');
my $export = $qg->get('/q/es_all?n=30000&stream=true', key => $c);
is($export->{status}, 200, 'an export of 30,000 rows by a key of 1 call a second, 10 at once');
my $next = $qg->get('/q/es_all?n=1', key => $c);
$qg->expect_error($next, 429, 'rate_limited', 'its next call waits: the export cost 30 calls');
# 9 calls were left after the export's first; 29 more make 20 owed, paid back at one a second.
cmp_ok($next->{headers}{'retry-after'}, '>=', 10, 'Retry-After says how long (about 20 s)');

done_testing();
