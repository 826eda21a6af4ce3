# HTTP as RFC 9112 says (issue 42, point 4; docs/http-conformance.md lists every rule). Each rule
# is sent on a raw socket to a real server:
# - what the RFC says to refuse is 400 with a stable code and the documented JSON, one answer, and
#   the server goes on: a control character in the path, raw or percent-encoded (GET
#   /q/account%00evil was served as account), invalid_path; whitespace between a field name and
#   its colon, an HTTP/1.1 request without Host or with two, an invalid Host, a folded line, a NUL
#   or CR in a field value (libmicrohttpd cut the value at the NUL), Transfer-Encoding in
#   HTTP/1.0, a method that is not a token, a request line with two spaces, a target in no form
#   HTTP has, a bad percent-encoding, and the body framings refused before (both Content-Length
#   and Transfer-Encoding, a last coding other than chunked, an invalid Content-Length),
#   invalid_request;
# - what the RFC says to accept is served: an absolute-form target, transfer-coding names in any
#   case, HTTP/1.0 without Host, an empty Host, whitespace after a value, lines ended by LF alone;
# - a HEAD never has a body, on any path (HEAD /events sent a chunked body's last chunk after its
#   head, which the next answer on the connection was read after): the next request's answer
#   follows the head at once, or the head says Connection: close and the connection closes.
use strict;
use warnings;
use IO::Select;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use QuerygateTest;

my $metrics_token = 'metrics-token-' . ('m' x 24);
my $qg = QuerygateTest->start(name => 'http_strict', workers => 1,
	metrics_token => $metrics_token,
	conf => "querygate.event_buffer = 16\nquerygate.max_event_streams_per_key = 2\n");
$qg->sql(q{
	CREATE TABLE strict_items (id int PRIMARY KEY, v text);
	INSERT INTO strict_items VALUES (1, 'one'), (2, 'two');
	SELECT querygate.save_query('account', 'SELECT id, v FROM strict_items WHERE id = :id');
});
$qg->role('strict_reader', select => ['strict_items']);
my $key = $qg->access(policy => 'strict_pol', run_as => 'strict_reader', queries => ['account']);
$qg->sql(q{SELECT querygate.grant_events('strict_pol')});
my $pids = $qg->worker_pids;
my $rows = [ { id => 1, v => 'one' } ];

# A POST of /q/account with these framing lines (after Host and the key) and this body.
sub post_with
{
	my ($framing, $body, $version) = @_;
	$version //= 'HTTP/1.1';
	return "POST /q/account $version\r\nHost: x\r\nX-API-Key: $key\r\nContent-Type: application/json\r\n"
	  . "$framing\r\n$body";
}

my $json_body = '{"params":{"id":1}}';
my $chunked_body = sprintf("%x\r\n%s\r\n0\r\n\r\n", length $json_body, $json_body);

# [name, bytes, status, code]
my @refused = (
	[ 'GET /q/account%00evil (a decoded NUL in the path)', "GET /q/account%00evil?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_path' ],
	[ 'a decoded LF in the path', "GET /q/account%0Aevil?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_path' ],
	[ 'a decoded DEL in the path', "GET /q/account%7F?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_path' ],
	[ 'a raw NUL in the path', "GET /q/account\0evil?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_path' ],
	[ 'a raw tab in the path', "GET /q/account\tevil?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_path' ],
	[ 'a raw NUL in the query string', "GET /q/account?id=1\0x HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_request' ],
	[ 'Transfer-Encoding : chunked (whitespace before the colon)', post_with("Content-Length: " . length($json_body) . "\r\nTransfer-Encoding : chunked\r\n", $json_body), 400, 'invalid_request' ],
	[ 'a tab before the colon', "GET /q/account?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key\t: $key\r\n\r\n", 400, 'invalid_request' ],
	[ 'an HTTP/1.1 request without Host', "GET /health HTTP/1.1\r\n\r\n", 400, 'invalid_request' ],
	[ 'two Host lines', "GET /health HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, 'invalid_request' ],
	[ 'two equal Host lines in HTTP/1.0', "GET /health HTTP/1.0\r\nHost: x\r\nHost: x\r\n\r\n", 400, 'invalid_request' ],
	[ 'a Host that is no host', "GET /health HTTP/1.1\r\nHost: a b/c\r\n\r\n", 400, 'invalid_request' ],
	[ 'a folded line (obs-fold)', "GET /health HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\n\r\n", 400, 'invalid_request' ],
	[ 'a folded key', "GET /q/account?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\tjunk\r\n\r\n", 400, 'invalid_request' ],
	[ 'a NUL inside a field value', "GET /q/account?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\0junk\r\n\r\n", 400, 'invalid_request' ],
	[ 'a NUL at the end of the last field value', "GET /health HTTP/1.1\r\nHost: x\0\r\n\r\n", 400, 'invalid_request' ],
	[ 'a bare CR in a field value', "GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400, 'invalid_request' ],
	[ 'Transfer-Encoding in HTTP/1.0', post_with("Transfer-Encoding: chunked\r\n", $chunked_body, 'HTTP/1.0'), 400, 'invalid_request' ],
	[ 'whitespace before the first field line (RFC 9112 2.2)', "GET /health HTTP/1.1\r\n Host: x\r\n\r\n", 400, 'invalid_request' ],
	[ 'the version in lower case (RFC 9112 2.3)', "GET /health http/1.1\r\nHost: x\r\n\r\n", 400, 'invalid_request' ],
	[ 'a tab between the method and the target', "GET\t/health HTTP/1.1\r\nHost: x\r\n\r\n", 400, 'invalid_request' ],
	[ 'a method that is not a token', "G(T /health HTTP/1.1\r\nHost: x\r\n\r\n", 400, 'invalid_request' ],
	[ 'two spaces after the method', "GET  /health HTTP/1.1\r\nHost: x\r\n\r\n", 400, 'invalid_request' ],
	[ 'a space inside the target', "GET /q/acc ount?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_request' ],
	[ 'a fragment in the target', "GET /q/account?id=1#frag HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_request' ],
	[ 'a target without its leading slash', "GET health HTTP/1.1\r\nHost: x\r\n\r\n", 400, 'invalid_request' ],
	[ 'GET * (asterisk-form is OPTIONS only)', "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400, 'invalid_request' ],
	[ "a '%' without two hex digits", "GET /q/account%zz?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", 400, 'invalid_request' ],
	[ 'Content-Length and Transfer-Encoding together', post_with("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", $chunked_body), 400, 'invalid_request' ],
	[ 'a last transfer coding other than chunked', post_with("Transfer-Encoding: chunked, gzip\r\n", $chunked_body), 400, 'invalid_request' ],
	[ 'an invalid Content-Length', post_with("Content-Length: 1x\r\n", $json_body), 400, 'invalid_request' ],
	[ 'two Content-Length lines', post_with("Content-Length: " . length($json_body) . "\r\nContent-Length: " . length($json_body) . "\r\n", $json_body), 400, 'invalid_request' ],
);

for my $c (@refused)
{
	my ($name, $bytes, $status, $code) = @$c;
	my $got = $qg->raw_exchange($bytes, timeout => timeouts(5), shutdown_write => 1);
	my ($head, $body) = split /\r\n\r\n/, $got, 2;
	$head //= '';
	$body //= '';
	like($head, qr{\AHTTP/1\.1 $status }, "$name: $status") or diag(substr($got, 0, 400));
	like($head, qr{^Content-Type: application/json}mi, "$name: a JSON answer");
	my $json = QuerygateTest::json_decode($body);
	is(ref $json eq 'HASH' ? $json->{code} : "(not JSON: $body)", $code, "$name: code $code");
	ok(ref $json eq 'HASH' && length($json->{error} // '') && ($json->{request_id} // '') =~ /^[0-9a-f]{16}$/,
		"$name: the error's sentence and a request id");
	my @heads = $got =~ m{^HTTP/1\.}mg;
	is(scalar @heads, 1, "$name: one answer");
}
is($qg->get('/health')->{status}, 200, 'the server still answers');

# [name, bytes, the answer's body]: what the RFC says to accept is served.
my @accepted = (
	[ 'an absolute-form target (RFC 9112 3.2.2)', "GET http://example.com:8080/q/account?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", $rows ],
	[ 'an absolute-form target without a path', "GET HTTP://example.com HTTP/1.1\r\nHost: x\r\n\r\n", undef ],
	[ 'Transfer-Encoding: CHUNKED (coding names in any case)', post_with("Transfer-Encoding: CHUNKED\r\n", $chunked_body), $rows ],
	[ 'Transfer-Encoding: Chunked', post_with("Transfer-Encoding: Chunked\r\n", $chunked_body), $rows ],
	[ 'HTTP/1.0 without Host', "GET /q/account?id=1 HTTP/1.0\r\nX-API-Key: $key\r\n\r\n", $rows ],
	[ 'an empty Host', "GET /q/account?id=1 HTTP/1.1\r\nHost:\r\nX-API-Key: $key\r\n\r\n", $rows ],
	[ 'a Host with a port, an IPv6 literal', "GET /q/account?id=1 HTTP/1.1\r\nHost: [::1]:8080\r\nX-API-Key: $key\r\n\r\n", $rows ],
	[ 'whitespace after a field value (not part of it)', "GET /q/account?id=1 HTTP/1.1\r\nHost: x \t\r\nX-API-Key: $key \t \r\n\r\n", $rows ],
	[ 'lines ended by LF alone', "GET /q/account?id=1 HTTP/1.1\nHost: x\nX-API-Key: $key\n\n", $rows ],
	[ 'an empty line before the request line', "\r\nGET /q/account?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", $rows ],
	[ 'OPTIONS * (asterisk-form)', "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", undef ],
	[ 'CONNECT host:port (authority-form)', "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", undef ],
	[ '%00 in a query-string value (the value is the parameter\'s business)', "GET /q/account?id=%00 HTTP/1.1\r\nHost: x\r\nX-API-Key: $key\r\n\r\n", undef ],
);
for my $c (@accepted)
{
	my ($name, $bytes, $want) = @$c;
	# One answer, read by its Content-Length: the connection stays open (keep-alive), and waiting
	# for its end would wait for the idle timeout.
	my $sock = $qg->connect_raw;
	syswrite($sock, $bytes);
	my ($status, $body, $head) = QuerygateTest::read_response_with_head($sock, timeouts(5));
	close $sock;
	$head //= '';
	my $got = $head . "\r\n\r\n" . ($body // '');
	if (defined $want)
	{
		like($head, qr{\AHTTP/1\.1 200 }, "$name: 200") or diag(substr($got, 0, 400));
		is_deeply(QuerygateTest::json_decode($body // ''), $want, "$name: the rows")
		  or diag(substr($got, 0, 400));
	}
	else
	{
		# Served: whatever its answer, it is not refused as malformed.
		my $json = QuerygateTest::json_decode($body // '');
		my $code = ref $json eq 'HASH' ? ($json->{code} // '') : '';
		ok($head =~ m{\AHTTP/1\.1 \d{3} } && $code ne 'invalid_request' && $code ne 'invalid_path',
			"$name: served") or diag(substr($got, 0, 400));
	}
}

# --- HEAD, on every path: the head alone; the next request on the connection is answered right
# after it (or the head says the connection closes, and it does).

# Sends a HEAD of $path (with $headers) and then GET /health on one connection, and reads until
# the /health answer has come or the connection closed. Returns (the HEAD's head, what followed
# it, whether the connection closed).
sub head_then_health
{
	my ($path, $headers) = @_;
	my $sock = $qg->connect_raw;
	syswrite($sock, "HEAD $path HTTP/1.1\r\nHost: x\r\n$headers\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n");
	my ($got, $closed, $sel) = ('', 0, IO::Select->new($sock));
	my $deadline = time() + timeouts(5);
	while (time() < $deadline && $got !~ /"status":"ok"[^}]*\}/)
	{
		last unless $sel->can_read($deadline - time());
		my $n = sysread($sock, my $buf, 65536);
		if (!$n) { $closed = 1; last; }
		$got .= $buf;
	}
	close $sock;
	my ($head, $rest) = split /\r\n\r\n/, $got, 2;
	return ($head // '', $rest // '', $closed);
}

my $auth = "X-API-Key: $key\r\n";
# [path, headers, status]
my @heads = (
	[ '/q/account?id=1', $auth, 405 ],
	[ '/events', $auth, 200 ],
	[ '/events', '', 401 ],
	[ '/health', '', 200 ],
	[ '/live', '', 200 ],
	[ '/ready', '', 200 ],
	[ '/openapi.json', $auth, 200 ],
	[ '/catalog', $auth, 200 ],
	[ '/catalog', '', 401 ],
	[ '/metrics', "Authorization: Bearer $metrics_token\r\n", 200 ],
	[ '/metrics', '', 401 ],
	[ '/mcp', $auth, 405 ],
	[ '/nowhere', '', 404 ],
	[ '/q/nothing', $auth, 405 ],
);
for my $h (@heads)
{
	my ($path, $headers, $status) = @$h;
	my $name = "HEAD $path" . ($headers eq '' ? '' : ' with credentials');
	my ($head, $rest, $closed) = head_then_health($path, $headers);
	like($head, qr{\AHTTP/1\.1 $status }, "$name: $status") or diag(substr($head, 0, 300));
	if ($head =~ /^Connection: close/mi)
	{
		is($rest, '', "$name: no body, and the connection closes after the head");
		ok($closed, "$name: closed");
	}
	else
	{
		like($rest, qr{\AHTTP/1\.1 200 OK\r\n}, "$name: no body: the next answer follows the head at once")
		  or diag(substr($rest, 0, 200));
		like($rest, qr/"status":"ok"/, "$name: and it is the next request's answer");
	}
}

# HEAD /events: the head a GET has (its type), and neither a length nor a chunked body.
my ($head) = head_then_health('/events', $auth);
like($head, qr{^Content-Type: text/event-stream}mi, 'HEAD /events: the type of the stream');
unlike($head, qr{^(Transfer-Encoding|Content-Length):}mi,
	'HEAD /events: neither Transfer-Encoding (no chunked body follows) nor Content-Length (the GET has no length)');
# No stream was opened for any HEAD: the key's places (querygate.max_event_streams_per_key = 2)
# are all free for GETs.
my @streams;
for my $i (1 .. 2)
{
	my $s = $qg->connect_raw;
	syswrite($s, "GET /events HTTP/1.1\r\nHost: x\r\n$auth\r\n");
	my ($got, $sel) = ('', IO::Select->new($s));
	while ($got !~ /\r\n\r\n/ && $sel->can_read(timeouts(5)))
	{
		last unless sysread($s, my $buf, 4096);
		$got .= $buf;
	}
	like($got, qr{\AHTTP/1\.1 200 }, "after the HEADs, GET /events $i of the key's 2: a stream")
	  or diag(substr($got, 0, 300));
	push @streams, $s;
}
close $_ for @streams;

is_deeply($qg->worker_pids, $pids, 'the worker never restarted');
done_testing();
