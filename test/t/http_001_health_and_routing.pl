# GET /health, /live and /ready, routing errors (404 not_found, 405 method_not_allowed with Allow),
# X-Request-Id echo and generation, and 503 unavailable while the extension is not installed (/ready
# says so too, and /live does not).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

# Started without the extension: the workers run, /health answers, /q/ is unavailable.
my $qg = QuerygateTest->start(name => 'routing', extension => 0);
my $node = $qg->node;

my $version = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'querygate'");
like($version, qr/^\d+\.\d+\.\d+$/, "installed extension version is $version");

# --- /health (also without the extension: it touches no SPI)
my $res = $qg->get('/health');
is($res->{status}, 200, 'GET /health: 200 before CREATE EXTENSION');
is_deeply($res->{json}, { status => 'ok', version => $version },
	'GET /health body is {"status":"ok","version":"<extension version>"}')
  or diag(QuerygateTest::describe($res));
like($res->{headers}{'content-type'} // '', qr{^application/json\b}, 'GET /health: Content-Type application/json');
like($res->{headers}{'x-request-id'} // '', qr/^[0-9a-f]{16}$/i, 'GET /health: generated X-Request-Id');

# --- /live: the loop is alive; /ready: calls can be served, not yet
$res = $qg->get('/live');
is($res->{status} . ' ' . ($res->{content} // ''), qq{200 {"status":"live","version":"$version"}},
	'GET /live: 200 before CREATE EXTENSION');
$qg->expect_error($qg->get('/ready'), 503, 'unavailable', 'GET /ready before CREATE EXTENSION');

# --- 503 unavailable while the extension is missing in querygate.database
$res = $qg->get('/q/anything', key => 'qg_' . ('A' x 43));
$qg->expect_error($res, 503, 'unavailable', 'GET /q/anything without the extension');
$res = $qg->post('/q/anything', { params => {} }, key => 'qg_' . ('A' x 43));
$qg->expect_error($res, 503, 'unavailable', 'POST /q/anything without the extension');

$node->safe_psql('postgres', 'CREATE EXTENSION querygate');
$node->safe_psql('postgres', q{
	SELECT querygate.save_query('one', 'SELECT 1 AS one');
	CREATE ROLE api_reader NOLOGIN;
	SELECT querygate.create_policy('reader', 'api_reader');
	SELECT querygate.grant_query('reader', 'one');
});
my $secret = $node->safe_psql('postgres', q{SELECT querygate.create_key('k', 'reader')});
ok(poll_until(sub { $qg->get('/q/one', key => $secret)->{status} == 200 }),
	'after CREATE EXTENSION the saved query is served (polled)');
is(scalar(grep { $qg->get('/q/one', key => $secret)->{status} == 200 } 1 .. 10), 10,
	'then 10 requests in a row succeed (every worker noticed)');
$res = $qg->get('/q/one', key => $secret);
$qg->expect_rows($res, [ { one => 1 } ], 'GET /q/one after CREATE EXTENSION');

$res = $qg->get('/health');
is($res->{status} . ' ' . ($res->{content} // ''), qq{200 {"status":"ok","version":"$version"}},
	'GET /health: exact body after CREATE EXTENSION');
is(scalar(grep { my $r = $qg->get('/ready'); "$r->{status} $r->{content}" eq qq{200 {"status":"ready","version":"$version","role":"primary"}} } 1 .. 10),
	10, 'GET /ready: 200 after CREATE EXTENSION, 10 times in a row');
$qg->expect_error($qg->post('/ready', {}), 405, 'method_not_allowed', 'POST /ready');
is($qg->post('/live', {})->{headers}{allow}, 'GET, HEAD', 'POST /live: 405 with Allow: GET, HEAD');

# --- 404 not_found for any other path (with or without a key)
for my $path ('/', '/nope', '/healthz', '/health/x', '/q', '/Q/one', '/query/one')
{
	$res = $qg->get($path);
	$qg->expect_error($res, 404, 'not_found', "GET $path");
}
$res = $qg->get('/nope', key => $secret);
$qg->expect_error($res, 404, 'not_found', 'GET /nope with a valid key');

# --- 405 method_not_allowed with Allow
for my $case (['DELETE', '/q/one', [qw(GET POST)]], ['PUT', '/q/one', [qw(GET POST)]],
	['PATCH', '/q/x', [qw(GET POST)]], ['POST', '/health', ['GET']], ['DELETE', '/health', ['GET']])
{
	my ($method, $path, $allowed) = @$case;
	$res = $qg->request($method, $path, key => $secret, ($method ne 'DELETE' ? (content => '{}') : ()));
	$qg->expect_error($res, 405, 'method_not_allowed', "$method $path");
	my $allow = $res->{headers}{allow} // '';
	my %got = map { uc($_) => 1 } grep { length } split /\s*,\s*/, $allow;
	ok((!grep { !$got{$_} } @$allowed) && !$got{$method}, "$method $path: Allow lists @$allowed (got '$allow')");
}

# --- X-Request-Id: echoed when valid (1-64 of [A-Za-z0-9._:-]), generated otherwise
for my $id ('a', 'abc-123', 'A.b_c:d-E', '0123456789abcdef', 'x' x 64)
{
	$res = $qg->get('/health', headers => { 'X-Request-Id' => $id });
	is($res->{headers}{'x-request-id'}, $id, "valid X-Request-Id '$id' is echoed");
	$res = $qg->get('/nope', headers => { 'X-Request-Id' => $id });
	is(($res->{json} // {})->{request_id}, $id, "valid X-Request-Id '$id' is the error's request_id");
}
for my $id ('x' x 65, 'bad id', 'semi;colon', 'slash/', 'quote"', 'star*', 'plus+', "tab\tsep", '')
{
	$res = $qg->get('/nope', headers => { 'X-Request-Id' => $id });
	my $got = $res->{headers}{'x-request-id'} // '';
	ok($got =~ /^[0-9a-f]{16}$/i && $got ne $id, "invalid X-Request-Id '$id' is replaced by a generated one (got '$got')")
	  or diag(QuerygateTest::describe($res));
	is(($res->{json} // {})->{request_id}, $got, "invalid X-Request-Id '$id': request_id equals the header");
}
my %seen;
for (1 .. 20)
{
	$seen{ $qg->get('/health')->{headers}{'x-request-id'} // '' }++;
}
is(scalar(grep { /^[0-9a-f]{16}$/i } keys %seen), 20, '20 requests, 20 distinct generated ids');

# Every response has X-Request-Id: success, 401, 404, 405.
my @responses = (
	$qg->get('/q/one', key => $secret), $qg->get('/q/one'), $qg->get('/q/nope', key => $secret),
	$qg->get('/x'), $qg->request('DELETE', '/q/one'));
is(scalar(grep { defined $_->{headers}{'x-request-id'} } @responses), 5, 'every response carries X-Request-Id');

done_testing();
