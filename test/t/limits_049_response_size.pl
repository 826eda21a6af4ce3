# Big answers (querygate.max_response_size, src/call/row_output.hpp), on one worker whose memory
# is read from /proc: a page of thirty 1 MB values under a 4 MB limit fails with 500
# response_too_large and the worker's peak memory grows by less than 32 MB (without the limit the
# page alone is 30 MB, and a worker holds an answer three times over on its way out); a stored
# value of 100 MB is refused without ever being read whole (the peak does not grow by it); a page
# under the limit is answered whole; the worker's memory is back near where it was; and the next
# call is served.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

# Under AddressSanitizer (make test-sanitize) freed memory is held in a quarantine, 256 MB by
# default, to catch a use after it is freed; this test measures memory given back, so its server
# keeps a small one.
$ENV{ASAN_OPTIONS} .= ':quarantine_size_mb=4' if ($ENV{ASAN_OPTIONS} // '') ne '';
my $qg = QuerygateTest->start(name => 'response_size', workers => 1,
	conf => "querygate.max_response_size = '4MB'\nquerygate.statement_timeout = '60s'\n");
$qg->sql(q{
	CREATE TABLE rs_big (id int PRIMARY KEY, v text NOT NULL);
	INSERT INTO rs_big SELECT g, repeat(md5(g::text), 31250) FROM generate_series(1, 30) g;
	INSERT INTO rs_big VALUES (100, repeat('x', 100000000));
	SELECT querygate.save_query('rs_page', 'SELECT id, v FROM rs_big WHERE id <= :n ORDER BY id');
	SELECT querygate.save_query('rs_one', 'SELECT v FROM rs_big WHERE id = :id');
});
is($qg->sql(q{SELECT octet_length(v) FROM rs_big WHERE id = 1}), '1000000', 'the values are 1 MB each');
$qg->role('rs_role', select => ['rs_big']);
my $key = $qg->access(policy => 'rs_pol', run_as => 'rs_role', queries => [qw(rs_page rs_one)], key => 'rs_key');
my ($pid) = @{ $qg->worker_pids };

# The worker's resident memory now and at its peak, in kB.
sub memory
{
	my $status = slurp_file("/proc/$pid/status");
	my ($rss) = $status =~ /^VmRSS:\s+(\d+) kB/m;
	my ($peak) = $status =~ /^VmHWM:\s+(\d+) kB/m;
	return ($rss, $peak);
}

sub call { return QuerygateTest::fresh_request($qg, 'GET', $_[0], key => $key); }

my $res = call('/q/rs_page?n=1');
is($res->{status}, 200, 'a page of one 1 MB value is answered');
my ($rss0, $peak0) = memory();
note("worker memory after the first call: $rss0 kB, peak $peak0 kB");

$res = call('/q/rs_page?n=30');
is($res->{status}, 500, 'a page of thirty 1 MB values under a 4 MB limit: 500');
my $err = QuerygateTest::json_decode($res->{content});
is($err->{code}, 'response_too_large', 'response_too_large');
like($err->{error}, qr/4194304 bytes/, 'the message says the limit');
my ($rss1, $peak1) = memory();
note("after it: $rss1 kB, peak $peak1 kB");
cmp_ok($peak1 - $peak0, '<', 32 * 1024, "the worker's peak memory grew by less than 32 MB (" . ($peak1 - $peak0) . ' kB)');

$res = call('/q/rs_one?id=100');
is($res->{status}, 500, 'a stored value of 100 MB: 500');
is(QuerygateTest::json_decode($res->{content})->{code}, 'response_too_large', 'response_too_large');
my ($rss2, $peak2) = memory();
note("after it: $rss2 kB, peak $peak2 kB");
cmp_ok($peak2 - $peak0, '<', 32 * 1024, 'the value was never read whole: the peak grew by less than 32 MB');

$res = call('/q/rs_page?n=3');
is($res->{status}, 200, 'a page of three 1 MB values (3 MB) is answered');
my $rows = QuerygateTest::json_decode($res->{content});
is(scalar(@$rows), 3, 'whole: three rows');
is(length($rows->[2]{v}), 1000000, 'each value whole');

my ($rss3) = memory();
note("after the calls: $rss3 kB");
cmp_ok($rss3 - $rss0, '<', 32 * 1024, "the worker's memory is back within 32 MB of where it was ("
	  . ($rss3 - $rss0) . ' kB)');
is(call('/q/rs_page?n=1')->{status}, 200, 'and the next call is served');

done_testing();
