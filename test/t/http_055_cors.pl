# Calls from web pages of other origins (src/http/cors.hpp): with querygate.cors_allowed_origins
# empty, nothing of CORS is sent and OPTIONS is refused as before; with origins listed, a
# preflight is answered 204 without a key, and only a listed origin (compared without case and a
# trailing slash) is told it may read, on every answer (errors, and a write answered by a write
# helper, included); "*" lets any origin read.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'cors', conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE TABLE cors_t (id int PRIMARY KEY, n int NOT NULL DEFAULT 0);
	INSERT INTO cors_t VALUES (1);
	SELECT querygate.save_query('cors_get', 'SELECT id, n FROM cors_t WHERE id = :id');
	SELECT querygate.save_query('cors_bump', 'UPDATE cors_t SET n = n + 1 WHERE id = :id');
});
$qg->role('cors_role', select => ['cors_t']);
$qg->sql('GRANT UPDATE ON cors_t TO cors_role');
my $key = $qg->access(policy => 'cors_pol', run_as => 'cors_role', queries => [qw(cors_get cors_bump)],
	setup => q{SELECT querygate.grant_writes('cors_pol', '{update}');});

my $app = 'https://app.example';
sub preflight
{
	my ($origin, $path) = @_;
	return $qg->request('OPTIONS', $path // '/q/cors_get',
		headers => { Origin => $origin, 'Access-Control-Request-Method' => 'GET',
			'Access-Control-Request-Headers' => 'x-api-key' });
}
sub from
{
	my ($origin, $path, %o) = @_;
	return $qg->get($path // '/q/cors_get?id=1', key => $key, headers => { Origin => $origin }, %o);
}

# --- off by default
is(preflight($app)->{status}, 405, 'off: OPTIONS is a method like any other (405)');
my $plain = from($app);
is($plain->{status}, 200, 'off: a call from a page is answered');
ok(!grep({ /^access-control-/ } keys %{ $plain->{headers} }), 'off: with no CORS header');

# --- a list of origins
$qg->set_and_reload('querygate.cors_allowed_origins', "$app, http://localhost:3000/");
ok(QuerygateTest::poll_until(sub { preflight($app)->{status} == 204 }), 'on: the preflight is answered 204');
my $pre = preflight($app);
is($pre->{headers}{'access-control-allow-origin'}, $app, 'the preflight lets the listed origin call');
like($pre->{headers}{'access-control-allow-methods'}, qr/\bGET\b.*\bPOST\b/, 'with GET and POST');
like($pre->{headers}{'access-control-allow-headers'}, qr/\bX-API-Key\b/i, 'and the X-API-Key header');
like($pre->{headers}{'access-control-allow-headers'}, qr/\bAuthorization\b/, 'and Authorization');
is($pre->{headers}{'access-control-max-age'}, '600', 'for ten minutes');
is($pre->{content} // '', '', 'with no body');
my $other = preflight('https://evil.example');
is($other->{status}, 204, 'a preflight from an origin not listed is answered too');
ok(!defined $other->{headers}{'access-control-allow-origin'}, 'but lets it call nothing');
is(preflight($app, '/no/such/path')->{status}, 204, 'a preflight needs no route of its own');

my $res = from($app);
is($res->{status}, 200, 'a call from the listed origin: 200');
is($res->{headers}{'access-control-allow-origin'}, $app, 'it may read the answer');
like($res->{headers}{'access-control-expose-headers'}, qr/\bX-Request-Id\b.*\bX-Page\b.*\bRetry-After\b/,
	'and the headers a page needs: the request id, the paging, Retry-After');
my $vary = $res->{headers}{vary} // '';
like(ref $vary ? join(', ', @$vary) : $vary, qr/\bOrigin\b/, 'the answer varies by Origin');
is(from('HTTPS://APP.EXAMPLE')->{headers}{'access-control-allow-origin'}, 'HTTPS://APP.EXAMPLE',
	'origins compare without case, and the origin sent is the one told');
is(from('http://localhost:3000')->{headers}{'access-control-allow-origin'}, 'http://localhost:3000',
	'a listed origin with a trailing slash is the origin without it');
my $evil = from('https://evil.example');
is($evil->{status}, 200, 'a call from an origin not listed is answered (the key decides)');
ok(!defined $evil->{headers}{'access-control-allow-origin'}, 'but the page may not read it');
ok(!defined from('https://app.example.evil')->{headers}{'access-control-allow-origin'},
	'an origin that only starts like a listed one is not listed');
my $nokey = $qg->get('/q/cors_get?id=1', headers => { Origin => $app });
is($nokey->{status}, 401, 'without a key: 401');
is($nokey->{headers}{'access-control-allow-origin'}, $app, 'which the page may read too');
my $write = $qg->post('/q/cors_bump?id=1', undef, key => $key, headers => { Origin => $app });
is($write->{content}, '{"rows_affected":1}', 'a write from the listed origin (answered by a write helper)');
is($write->{headers}{'access-control-allow-origin'}, $app, 'carries the header too');
my $get = $qg->request('GET', '/q/cors_get?id=1', key => $key);
ok(!defined $get->{headers}{'access-control-allow-origin'}, 'a call without Origin gets no CORS header');

# --- any origin
$qg->set_and_reload('querygate.cors_allowed_origins', '*');
ok(QuerygateTest::poll_until(sub { (from('https://evil.example')->{headers}{'access-control-allow-origin'} // '') eq '*' }),
	'"*": any origin may read, told "*"');
is(preflight('https://evil.example')->{headers}{'access-control-allow-origin'}, '*', '"*": and may call');

done_testing();
