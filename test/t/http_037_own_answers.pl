# Requests libmicrohttpd refuses by itself, before any callback of querygate runs (a header larger
# than a connection's memory, a malformed header or chunked body, an HTTP version it does not
# speak, a Content-Length it cannot read), and framings querygate refuses before reading a body
# (several Content-Length lines, Content-Length beside Transfer-Encoding, a coding other than
# chunked: src/http/framing.hpp), and a query string of more arguments or bytes than a connection's
# memory holds beside each other (src/http/http_server.cpp), get the same JSON error as every other refusal, with a stable
# code and a request id, never libmicrohttpd's HTML page (src/http/own_answers.hpp). Each is sent
# on a raw socket; the answer must be exactly one well-formed HTTP answer with a JSON body (for a
# Content-Length libmicrohttpd could not read it used to send the head twice), the server goes on,
# and libmicrohttpd's messages about them reach the server log at most once a minute.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'own_answers', workers => 1);
my $pids = $qg->worker_pids;

# [name, bytes, status, code]
my @cases = (
	[ 'a header larger than a connection may hold', "GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " . ('a' x 100_000) . "\r\n\r\n", 431, 'header_too_large' ],
	[ 'many headers', "GET /health HTTP/1.1\r\nHost: x\r\n" . join('', map { "X-H$_: " . ('b' x 100) . "\r\n" } 1 .. 1000) . "\r\n", 431, 'header_too_large' ],
	[ 'a header line without a colon', "GET /health HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", 400, 'invalid_request' ],
	[ 'a chunked body with a malformed chunk size', "POST /q/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nxx\r\n0\r\n\r\n", 400, 'invalid_request' ],
	[ 'an HTTP version it does not speak', "GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505, 'invalid_request' ],
	[ 'a negative Content-Length', post_with("Content-Length: -1\r\n"), 400, 'invalid_request' ],
	[ 'a Content-Length that is not a number', post_with("Content-Length: 12abc\r\n"), 400, 'invalid_request' ],
	[ 'a Content-Length beyond 64 bits', post_with("Content-Length: 99999999999999999999999\r\n"), 413, 'payload_too_large' ],
	[ 'two different Content-Length lines', post_with("Content-Length: 2\r\nContent-Length: 7\r\n"), 400, 'invalid_request' ],
	[ 'Content-Length beside Transfer-Encoding', post_with("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n"), 400, 'invalid_request' ],
	[ 'a coding before chunked', post_with("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"), 501, 'invalid_request' ],
	[ 'a Transfer-Encoding whose last coding is not chunked', post_with("Transfer-Encoding: chunked, gzip\r\n", "0\r\n\r\n"), 400, 'invalid_request' ],
	[ 'a query string of 1000 empty arguments', "GET /q/x?" . ('&' x 1000) . " HTTP/1.1\r\nHost: x\r\n\r\n", 414, 'uri_too_long' ],
	[ 'a query string of 129 arguments', "GET /q/x?" . join('&', map { "a$_=1" } 1 .. 129) . " HTTP/1.1\r\nHost: x\r\n\r\n", 414, 'uri_too_long' ],
	# 60 arguments in 29 kB: their records did not fit beside it, and no answer came until the
	# request timeout.
	[ 'a query string of 29 kB', "GET /q/x?" . join('&', map { "a$_=" . ('v' x 480) } 1 .. 60) . " HTTP/1.1\r\nHost: x\r\n\r\n", 414, 'uri_too_long' ],
);

# A POST with these framing lines and this body (by default a small JSON object).
sub post_with
{
	my ($framing, $body) = @_;
	return "POST /q/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n$framing\r\n" . ($body // '{}');
}

my $log_start = -s $qg->node->logfile;
my $started = time();

for my $c (@cases)
{
	my ($name, $bytes, $status, $code) = @$c;
	my $got = $qg->raw_exchange($bytes, timeout => 5, shutdown_write => 1);
	my ($head, $body) = split /\r\n\r\n/, $got, 2;
	$head //= '';
	$body //= '';
	like($head, qr{\AHTTP/1\.[01] $status }, "$name: status $status")
	  or diag(substr($got, 0, 300));
	like($head, qr{^Content-Type: application/json}mi, "$name: a JSON answer");
	my $json = QuerygateTest::json_decode($body);
	is(ref $json eq 'HASH' ? $json->{code} : "(not JSON: $body)", $code, "$name: code $code");
	ok(ref $json eq 'HASH' && length($json->{error} // '') && ($json->{request_id} // '') =~ /^[0-9a-f]{16}$/,
		"$name: the error's sentence and a request id");
	my ($id) = $head =~ /^X-Request-Id: (\S+)/mi;
	is($id, ref $json eq 'HASH' ? $json->{request_id} : undef, "$name: X-Request-Id is the body's request id");
	unlike($got, qr/<html/i, "$name: no HTML");
	my @heads = $got =~ m{^HTTP/1\.}mg;
	is(scalar @heads, 1, "$name: one answer, one head");
	my $health = $qg->get('/health');
	is($health->{status}, 200, "$name: the server still answers");
}
is_deeply($qg->worker_pids, $pids, 'the worker never restarted');

# 128 arguments are still a call: the limit is more than 128.
my $res = $qg->get('/q/x?' . join('&', map { "a$_=1" } 1 .. 128));
is($res->{json}{code}, 'unauthorized', '128 arguments: read, and the call goes on to its key');

# The server log: the first of libmicrohttpd's messages, then at most one line a minute (its
# summary), whatever the number of malformed requests (src/common/log_throttle.hpp).
$qg->raw_exchange(post_with("Content-Length: -1\r\n"), timeout => 5, shutdown_write => 1) for 1 .. 50;
my $minutes = int((time() - $started) / 60) + 1;
my $log = slurp_file($qg->node->logfile, $log_start);
my @lines = $log =~ /^.*querygate http: .*$/mg;
cmp_ok(scalar @lines, '<=', 1 + $minutes,
	"libmicrohttpd's messages about 60+ malformed requests: at most the first and one a minute")
  or diag(join("\n", @lines));

done_testing();
