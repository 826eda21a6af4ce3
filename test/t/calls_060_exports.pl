# Exports (?stream=true, src/call/export_file.hpp), on one worker: every row of a call, in each
# format, written to a file and sent from it as a download, read back by Python's csv and json;
# masks apply row by row as on a page; the worker's peak memory grows by far less than the export
# (its file is not in memory); a reader that stops reading holds a file, not the worker, which
# answers other calls meanwhile; querygate.max_exports bounds exports at once, and a place comes
# back when the file is sent or its caller hangs up; querygate.max_export_size bounds the file;
# paging, a write or a bad value of stream is 400 invalid_stream; the history counts the rows and
# the file's bytes.
# Runs alone: its slow reader and the worker's peak memory are measured while it runs, and a
# suite beside it changes both.
use strict;
use warnings;
use IO::Select;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(time sleep);

$ENV{ASAN_OPTIONS} .= ':quarantine_size_mb=4' if ($ENV{ASAN_OPTIONS} // '') ne '';
my $qg = QuerygateTest->start(name => 'exports', workers => 1,
	conf => "querygate.allow_writes = on\nquerygate.max_exports = 1\nquerygate.statement_timeout = '60s'\n"
	  . "querygate.history_flush_interval = '100ms'\n");
my $F = QuerygateTest::timeouts(1);
my $N = 300_000;
$qg->sql(qq{
	CREATE TABLE ex_t (id int PRIMARY KEY, label text NOT NULL, secret text);
	INSERT INTO ex_t SELECT g, 'label, "number" ' || g || repeat('x', 100), 's' || g FROM generate_series(1, $N) g;
	SELECT querygate.save_query('ex_all', 'SELECT id, label, secret FROM ex_t WHERE id <= :n ORDER BY id');
	SELECT querygate.save_query('ex_touch', 'UPDATE ex_t SET secret = secret WHERE id = :id');
});
$qg->role('ex_role', select => ['ex_t']);
$qg->sql('GRANT UPDATE ON ex_t TO ex_role');
my $key = $qg->access(policy => 'ex_pol', run_as => 'ex_role', queries => [qw(ex_all ex_touch)],
	setup => q{SELECT querygate.mask('ex_pol', 'public.ex_t.secret', 'hash');
	           SELECT querygate.grant_writes('ex_pol', '{update}');});
my ($pid) = @{ $qg->worker_pids };


sub peak_kb
{
	my ($peak) = slurp_file("/proc/$pid/status") =~ /^VmHWM:\s+(\d+) kB/m;
	return $peak;
}

my $page = $qg->get('/q/ex_all?n=2', key => $key);
my $hashed = $page->{json}[0]{secret};
like($hashed, qr/^[0-9a-f]{64}$/, 'a page hashes the secret column');

# --- every row, as CSV, from a file. The worker reads the table once first: its pages of the
# shared buffers count in its resident memory once it has touched them, and are not its own.
is($qg->get("/q/ex_all?n=$N&stream=true&format=csv", key => $key)->{status}, 200, 'an export, once');
my $peak0 = peak_kb();
my $csv = $qg->get("/q/ex_all?n=$N&stream=true&format=csv", key => $key, headers => { 'X-Request-Id' => 'ex-csv' });
my $peak1 = peak_kb();
is($csv->{status}, 200, "an export of $N rows: 200");
is($csv->{headers}{'content-type'}, 'text/csv; charset=utf-8; header=present', 'as CSV');
is($csv->{headers}{'content-disposition'}, 'attachment; filename="ex_all.csv"', 'a download with a name');
ok(!defined $csv->{headers}{'x-page'}, 'not a page');
my $bytes = length($csv->{content});
cmp_ok($bytes, '>', 40_000_000, "of over 40 MB ($bytes bytes)");
my $records = parse_answer('csv', $csv->{content});
is(scalar(@$records), $N + 1, "Python's csv module reads the header and $N rows");
is_deeply($records->[1], [ '1', 'label, "number" 1' . ('x' x 100), $hashed ], 'the first row, its secret hashed as on a page');
is($records->[-1][0], $N, 'and the last');
cmp_ok($peak1 - $peak0, '<', 32 * 1024, 'the worker\'s peak memory grew by less than 32 MB (' . ($peak1 - $peak0) . ' kB)');
ok(QuerygateTest::poll_until(sub {
	$qg->sql(q{SELECT rows || ' ' || bytes FROM querygate.history WHERE request_id = 'ex-csv'}) eq "$N $bytes" }),
	'the history counts its rows and the bytes of its file')
  or diag('history: ' . $qg->sql(q{SELECT concat_ws(' ', status, code, rows, bytes) FROM querygate.history WHERE request_id = 'ex-csv'})
	  . '; stat_history: ' . $qg->sql(q{SELECT row_to_json(s) FROM querygate.stat_history s}));

# --- the other formats
my $nd = $qg->get('/q/ex_all?n=1000&stream=true', key => $key, headers => { Accept => 'application/x-ndjson' });
is($nd->{headers}{'content-disposition'}, 'attachment; filename="ex_all.ndjson"', 'NDJSON by Accept');
is(scalar(@{ parse_answer('ndjson', $nd->{content}) }), 1000, 'a line a row');
my $json = $qg->post('/q/ex_all', { params => { n => 1000 }, stream => JSON::PP::true }, key => $key);
my $rows = parse_answer('json', $json->{content});
is(scalar(@$rows), 1000, 'JSON, asked for in a POST body: an array of every row');
is($rows->[0]{secret}, $hashed, 'masked alike');
my $tsv = $qg->get('/q/ex_all?n=10&stream=true&format=tsv', key => $key);
is(scalar(@{ parse_answer('tsv', $tsv->{content}) }), 11, 'TSV with its header');
is($qg->get('/q/ex_all?n=0&stream=true&format=csv', key => $key)->{content}, "id,label,secret\r\n",
	'no rows: the header alone');

# --- refused
$qg->expect_error($qg->get('/q/ex_all?n=10&stream=true&page=2', key => $key), 400, 'invalid_stream', 'a stream with a page');
$qg->expect_error($qg->get('/q/ex_all?n=10&stream=yes', key => $key), 400, 'invalid_stream', 'stream=yes');
$qg->expect_error($qg->post('/q/ex_touch?id=1&stream=true', undef, key => $key), 400, 'invalid_stream', 'a write');
is($qg->post('/q/ex_touch?id=1', undef, key => $key)->{status}, 200, 'which runs as a call');

# --- a reader that stops holds a file, not the worker
sub start_export
{
	my $sock = $qg->connect_raw;
	syswrite($sock, "GET /q/ex_all?n=$N&stream=true&format=csv HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n");
	my ($head, $sel) = ('', IO::Select->new($sock));
	while ($head !~ /\r\n\r\n/ && $sel->can_read(30 * $F))
	{
		sysread($sock, $head, 4096, length $head) or last;
	}
	return ($sock, $head);
}
my ($slow, $head) = start_export();
like($head, qr{^HTTP/1\.1 200}, 'an export whose caller then stops reading');
my $t0 = time();
my $other = $qg->get('/q/ex_all?n=1', key => $key);
my $took = time() - $t0;
is($other->{status}, 200, 'the worker answers another call meanwhile');
cmp_ok($took, '<', 2 * $F, "at once ($took s)");
$qg->expect_error($qg->get('/q/ex_all?n=5&stream=true', key => $key), 503, 'too_many_exports',
	'a second export over querygate.max_exports = 1');
ok(defined $qg->get('/q/ex_all?n=5&stream=true', key => $key)->{headers}{'retry-after'}, 'with Retry-After');
# The rest of the first one, whole.
my ($rest, $closed) = ('', 0);
my ($len) = $head =~ /^content-length:\s*(\d+)/mi;
my $got = length($head) - index($head, "\r\n\r\n") - 4;
my $sel = IO::Select->new($slow);
my ($ended, $log_from, $reading) = ('', -s $qg->node->logfile, time());
while ($got < $len)
{
	# Why a short read ended, said if it fails: the server closing (and what it logged then)
	# is not the same fault as a send that stalls.
	$ended = 'nothing for ' . (30 * $F) . ' s', last unless $sel->can_read(30 * $F);
	my $n = sysread($slow, my $buf, 1 << 20);
	$ended = defined $n ? 'the server closed the connection' : "a read failed: $!", last unless $n;
	$got += $n;
}
is($got, $len, 'the slow reader gets every byte in the end')
  or diag(sprintf("%s after %.1f s of reading; the server's log meanwhile:\n%s", $ended,
	time() - $reading, slurp_file($qg->node->logfile, $log_from)));
close $slow;
ok(QuerygateTest::poll_until(sub { $qg->get('/q/ex_all?n=5&stream=true', key => $key)->{status} == 200 }),
	'once it is sent, another export may run');

# --- a caller that hangs up gives its place back
my ($gone) = start_export();
close $gone;
ok(QuerygateTest::poll_until(sub { $qg->get('/q/ex_all?n=5&stream=true', key => $key)->{status} == 200 }),
	'a caller that hangs up mid-download gives its place back');

# --- querygate.max_export_size
$qg->set_and_reload('querygate.max_export_size', '1MB');
# Polled with 20,000 rows (about 4 MB): a poll made before the reload reaches the worker sends its
# whole export, and all of $N (60 MB) took the poll's whole time on a loaded machine.
my $last;
ok(QuerygateTest::poll_until(sub { ($last = $qg->get('/q/ex_all?n=20000&stream=true', key => $key))->{status} == 500 }),
	'an export larger than querygate.max_export_size: 500')
  or diag('the last answer: status ' . $last->{status} . ', ' . length($last->{content} // '')
	  . ' bytes, starting ' . substr($last->{content} // '', 0, 300));
my $big = $qg->get("/q/ex_all?n=$N&stream=true", key => $key);
$qg->expect_error($big, 500, 'response_too_large', 'response_too_large', names => qr/export/);
is($qg->get('/q/ex_all?n=100&stream=true', key => $key)->{status}, 200, 'a smaller one still runs');

done_testing();
