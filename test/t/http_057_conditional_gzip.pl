# Conditional requests and compression (src/http/answer_encoding.hpp): every 200 answer of a call
# carries a weak ETag of its body; a GET whose If-None-Match names it (weakly, in a list, or "*")
# is answered 304 with no body; a changed answer has another tag; a POST is never conditional. An
# answer of a kilobyte or more goes gzip-compressed to a caller whose Accept-Encoding allows gzip,
# and decompresses (Python's gzip module) to exactly the uncompressed answer, under the same tag.
use strict;
use warnings;
use IO::Select;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'conditional_gzip');
$qg->sql(q{
	CREATE TABLE cg_t (id int PRIMARY KEY, label text NOT NULL);
	INSERT INTO cg_t SELECT g, 'label number ' || g FROM generate_series(1, 200) g;
	SELECT querygate.save_query('cg_one', 'SELECT id, label FROM cg_t WHERE id = :id');
	SELECT querygate.save_query('cg_all', 'SELECT id, label FROM cg_t ORDER BY id');
});
$qg->role('cg_role', select => ['cg_t']);
my $key = $qg->access(policy => 'cg_pol', run_as => 'cg_role', queries => [qw(cg_one cg_all)]);

sub call
{
	my ($path, %headers) = @_;
	return $qg->get($path, key => $key, headers => \%headers);
}

# --- entity tags and If-None-Match
my $first = call('/q/cg_one?id=1');
is($first->{status}, 200, 'a call: 200');
my $tag = $first->{headers}{etag} // '';
like($tag, qr{^W/"[0-9a-f]{32}"$}, 'with a weak ETag');
is(call('/q/cg_one?id=1')->{headers}{etag}, $tag, 'the same answer has the same tag');
my $not_modified = call('/q/cg_one?id=1', 'If-None-Match' => $tag);
is($not_modified->{status}, 304, 'If-None-Match naming it: 304');
is($not_modified->{content} // '', '', 'with no body');
is($not_modified->{headers}{etag}, $tag, 'and the tag');
like($not_modified->{headers}{'x-request-id'} // '', qr/^[0-9a-f]{16}$/, 'and a request id');
is($not_modified->{headers}{'content-length'}, length($first->{content}),
	"its Content-Length is the 200's (RFC 9110, 15.4.5: none, or the 200's)");
ok(!defined $not_modified->{headers}{'content-type'}, 'and no Content-Type: it has no body');
# On the wire: the head alone, and the connection goes on with the next answer.
my $sock = $qg->connect_raw;
print $sock "GET /q/cg_one?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\nIf-None-Match: $tag\r\n\r\n"
  . "GET /q/cg_one?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n";
my $head304 = '';
my $sel = IO::Select->new($sock);
while ($head304 !~ /\r\n\r\n\z/ && $sel->can_read(QuerygateTest::timeouts(10)))
{
	sysread($sock, $head304, 1, length $head304) or last;
}
like($head304, qr{^HTTP/1\.1 304 }, 'a 304 on a connection');
my ($next_status, $next_body) = QuerygateTest::read_response($sock, QuerygateTest::timeouts(10));
is("$next_status $next_body", "200 $first->{content}", 'is followed at once by the next answer, whole');
close $sock;
(my $strong = $tag) =~ s{^W/}{};
is(call('/q/cg_one?id=1', 'If-None-Match' => $strong)->{status}, 304, 'compared weakly: the tag without W/ matches');
is(call('/q/cg_one?id=1', 'If-None-Match' => qq{W/"0123", $tag})->{status}, 304, 'a list that holds it');
is(call('/q/cg_one?id=1', 'If-None-Match' => '*')->{status}, 304, '"*"');
is(call('/q/cg_one?id=1', 'If-None-Match' => 'W/"0123"')->{status}, 200, 'another tag: 200');
isnt(call('/q/cg_one?id=2')->{headers}{etag}, $tag, 'another answer has another tag');
isnt(call('/q/cg_one?id=1&format=csv')->{headers}{etag}, $tag, 'so does the same rows in another format');
$qg->sql(q{UPDATE cg_t SET label = 'changed' WHERE id = 1});
my $changed = call('/q/cg_one?id=1', 'If-None-Match' => $tag);
is($changed->{status}, 200, 'once the data changed, the old tag: 200');
isnt($changed->{headers}{etag}, $tag, 'with a new tag');
my $post = $qg->post('/q/cg_one', { params => { id => 1 } }, key => $key,
	headers => { 'If-None-Match' => $changed->{headers}{etag} });
is($post->{status}, 200, 'a POST is never conditional (it may write)');
is($post->{headers}{etag}, $changed->{headers}{etag}, 'but carries the tag');

# --- gzip
sub gunzip
{
	my ($bytes) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'python3', '-c', 'import gzip, sys; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))' ],
		'<', \$bytes, '>', \$out, '2>', \$err)
	  or return "(not gzip: $err)";
	return $out;
}
my $plain = call('/q/cg_all?page_size=200');
cmp_ok(length($plain->{content}), '>', 1024, 'a page of over a kilobyte');
ok(!defined $plain->{headers}{'content-encoding'}, 'without Accept-Encoding: not compressed');
my $gz = $qg->{http}->request('GET', $qg->base_url . '/q/cg_all?page_size=200',
	{ headers => { 'X-API-Key' => $key, 'Accept-Encoding' => 'gzip, deflate' } });
is($gz->{status}, 200, 'Accept-Encoding: gzip, deflate: 200');
is($gz->{headers}{'content-encoding'}, 'gzip', 'compressed with gzip');
cmp_ok(length($gz->{content}), '<', length($plain->{content}) / 3, 'to less than a third');
is(gunzip($gz->{content}), $plain->{content}, "Python's gzip module gets the answer back exactly");
is($gz->{headers}{etag}, $plain->{headers}{etag}, 'under the same tag');
like($gz->{headers}{vary}, qr/Accept-Encoding/, 'and the answer varies by Accept-Encoding');
my %codings = ('gzip;q=0' => 0, '*' => 1, 'identity' => 0, 'GZIP;q=0.5' => 1, 'gzip;q=0, *' => 0, 'x-gzip' => 1,
	'br' => 0);
for my $ae (sort keys %codings)
{
	my $r = $qg->{http}->request('GET', $qg->base_url . '/q/cg_all?page_size=200',
		{ headers => { 'X-API-Key' => $key, 'Accept-Encoding' => $ae } });
	is(($r->{headers}{'content-encoding'} // 'none'), $codings{$ae} ? 'gzip' : 'none', "Accept-Encoding: $ae");
}
my $small = $qg->{http}->request('GET', $qg->base_url . '/q/cg_one?id=2',
	{ headers => { 'X-API-Key' => $key, 'Accept-Encoding' => 'gzip' } });
ok(!defined $small->{headers}{'content-encoding'}, 'an answer under a kilobyte is not compressed');
my $gz304 = $qg->{http}->request('GET', $qg->base_url . '/q/cg_all?page_size=200',
	{ headers => { 'X-API-Key' => $key, 'Accept-Encoding' => 'gzip', 'If-None-Match' => $plain->{headers}{etag} } });
is($gz304->{status}, 304, 'the compressed answer is not modified under its tag either');
is($gz304->{content} // '', '', 'and has no body');
is($gz304->{headers}{'content-length'}, length($gz->{content}), 'its length is the compressed 200\'s');
ok(!defined $gz304->{headers}{'content-encoding'} && !defined $gz304->{headers}{'content-type'},
	'with neither Content-Encoding nor Content-Type');
my $curl = `curl -s --compressed -H 'X-API-Key: $key' '@{[ $qg->base_url ]}/q/cg_all?page_size=200'`;
is($curl, $plain->{content}, 'curl --compressed reads the same answer');

done_testing();
