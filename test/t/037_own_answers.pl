# Requests libmicrohttpd refuses by itself, before any callback of querygate runs (a header larger
# than a connection's memory, a malformed header or chunked body, an HTTP version it does not
# speak), get the same JSON error as every other refusal, with a stable code
# and a request id, never libmicrohttpd's HTML page (src/http/own_answers.hpp). Each is sent on a
# raw socket; the one answer must be well-formed HTTP with a JSON body, and the server goes on.
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
);

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
	my $health = $qg->get('/health');
	is($health->{status}, 200, "$name: the server still answers");
}
is_deeply($qg->worker_pids, $pids, 'the worker never restarted');

done_testing();
