# 401 unauthorized (missing, malformed, wrong, expired, revoked key: one body for all),
# 404 query_not_found (unknown and ungranted: one body), 413 payload_too_large after a reload of
# querygate.max_body_size, and 400 invalid_body.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

our $TODO;

my $qg = QuerygateTest->start(name => 'auth');
$qg->sql(q{
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int);
	INSERT INTO accounts SELECT g, 1, 0 FROM generate_series(1, 10) AS g;
	SELECT querygate.save_query('account', 'SELECT aid, bid, abalance FROM accounts WHERE aid = :aid');
	SELECT querygate.save_query('other', 'SELECT 1 AS one');
	SELECT querygate.save_query('echo', 'SELECT :s::text AS s');
});
my $good = $qg->access(policy => 'reader', run_as => $qg->role('api_reader', select => ['accounts']),
	queries => [qw(account echo)]);
my $revoked = $qg->access(policy => 'reader', key => 'gone');
$qg->sql(q{SELECT querygate.revoke_key('gone')});
# create_key refuses an expiry that is not in the future (22023), so the expired key is one that
# expires a second after it is made; the poll below waits for it to lapse.
like(sql_error($qg, q{SELECT querygate.create_key('past', 'reader', now() - interval '1 hour')}),
	qr/^22023 expires_at must be in the future/, 'create_key refuses an expires_at in the past');
my $expired = $qg->access(policy => 'reader', key => 'old', key_args => q{expires_at => now() + interval '1 second'});
my $later = $qg->access(policy => 'reader', key => 'later', key_args => q{expires_at => now() + interval '1 day'});
my $other_policy = $qg->access(policy => 'outsider', run_as => $qg->role('api_outsider'), queries => ['other']);

my $rid = 'auth-test-1';
my %h = ('X-Request-Id' => $rid);
my $ok = $qg->get('/q/account?aid=1', key => $good, headers => \%h);
is($ok->{status}, 200, 'the good key works') or diag(QuerygateTest::describe($ok));
$ok = $qg->get('/q/account?aid=1', key => $later, headers => \%h);
is($ok->{status}, 200, 'a key expiring tomorrow works') or diag(QuerygateTest::describe($ok));
ok(poll_until(sub { $qg->get('/q/account?aid=1', key => $expired)->{status} == 401 }),
	'the expired key is refused');

# --- 401: every case, the same body (same X-Request-Id sent, so bodies must be byte-identical)
my $wrong = $good;
substr($wrong, -1, 1) = substr($wrong, -1, 1) eq 'A' ? 'B' : 'A';
my @cases = (
	[ 'no key', {} ],
	[ 'empty X-API-Key', { 'X-API-Key' => '' } ],
	[ 'malformed key', { 'X-API-Key' => 'hello' } ],
	[ 'wrong key (last character changed)', { 'X-API-Key' => $wrong } ],
	[ 'wrong key with a valid format', { 'X-API-Key' => 'qg_' . ('A' x 43) } ],
	[ 'the secret without its prefix', { 'X-API-Key' => substr($good, 3) } ],
	[ 'revoked key', { 'X-API-Key' => $revoked } ],
	[ 'expired key', { 'X-API-Key' => $expired } ],
	[ 'wrong Bearer', { 'Authorization' => "Bearer $wrong" } ],
	[ 'revoked Bearer', { 'Authorization' => "Bearer $revoked" } ],
	[ 'Basic instead of Bearer', { 'Authorization' => "Basic $good" } ],
	[ 'Bearer without a token', { 'Authorization' => 'Bearer' } ],
	[ 'hash of the secret instead of the secret', { 'X-API-Key' => '\\x' . unpack('H*', 'x' x 32) } ]);
my $first;
for my $c (@cases)
{
	my ($name, $hdr) = @$c;
	for my $method ('GET', 'POST')
	{
		my $res = $method eq 'GET'
		  ? $qg->get('/q/account?aid=1', headers => { %h, %$hdr })
		  : $qg->post('/q/account', { params => { aid => 1 } }, headers => { %h, %$hdr });
		$qg->expect_error($res, 401, 'unauthorized', "$method, $name");
		$first //= $res->{content};
		is($res->{content}, $first, "$method, $name: the same body as every other 401");
	}
}
# 401 comes before 404: an unknown query with a bad key is still 401 with the same body.
my $res = $qg->get('/q/no_such_query', headers => { %h, 'X-API-Key' => $wrong });
$qg->expect_error($res, 401, 'unauthorized', 'unknown query with a wrong key');
is($res->{content}, $first, 'unknown query with a wrong key: the same 401 body');

# --- 404 query_not_found: unknown query and ungranted query are indistinguishable
my @nf = (
	[ 'unknown query', '/q/no_such_query' ],
	[ 'existing query not granted to the policy', '/q/other' ],
	[ 'invalid query name', '/q/bad%20name' ],
	[ 'query name of 64 characters', '/q/' . ('a' x 64) ]);
# The body may name the query the caller asked for; apart from that it is the same for all.
sub without_name
{
	my ($body, $path) = @_;
	(my $name = $path) =~ s{^/q/}{};
	$name =~ s/%20/ /g;
	$body =~ s/\Q$name\E/<name>/g;
	return $body;
}
my $first404;
for my $c (@nf)
{
	my ($name, $path) = @$c;
	$res = $qg->get($path, key => $good, headers => \%h);
	$qg->expect_error($res, 404, 'query_not_found', "GET $name");
	$first404 //= without_name($res->{content}, $path);
	is(without_name($res->{content}, $path), $first404, "GET $name: the same body as every other query_not_found");
	$res = $qg->post($path, { params => {} }, key => $good, headers => \%h);
	$qg->expect_error($res, 404, 'query_not_found', "POST $name");
	is(without_name($res->{content}, $path), $first404, "POST $name: the same body");
}
unlike($first404, qr/grant|permission|policy/i, 'query_not_found does not mention grants');
$res = $qg->get('/q/other', key => $other_policy);
is($res->{status}, 200, 'the other policy can call "other"');
$res = $qg->get('/q/account?aid=1', key => $other_policy);
$qg->expect_error($res, 404, 'query_not_found', 'the other policy cannot call "account"');

# --- 400 invalid_body
my @bodies = (
	[ 'not JSON', 'hello' ],
	[ 'truncated JSON', '{"params": {"aid": 1}' ],
	[ 'a JSON array', '[1, 2]' ],
	[ 'a JSON string', '"params"' ],
	[ 'a JSON number', '42' ],
	[ 'JSON null', 'null' ],
	[ 'params is an array', '{"params": [1]}' ],
	[ 'params is a string', '{"params": "aid=1"}' ],
	[ 'params is a number', '{"params": 1}' ],
	[ 'params is null', '{"params": null}' ],
	[ 'trailing garbage', '{"params": {"aid": 1}} x' ],
	[ 'an unknown field next to params', '{"params": {"aid": 1}, "parms": {"aid": 2}}' ],
	[ 'two JSON objects', '{"params": {"aid": 1}}{"params": {"aid": 2}}' ]);
for my $c (@bodies)
{
	my ($name, $body) = @$c;
	$res = $qg->request('POST', '/q/account', key => $good, content => $body);
	$qg->expect_error($res, 400, 'invalid_body', "POST body: $name");
}
# An empty body is a call without parameters (curl -X POST): here the query needs one.
$res = $qg->request('POST', '/q/account', key => $good, content => '');
$qg->expect_error($res, 400, 'param_required', 'POST with an empty body: a call without parameters', param => 'aid');
is($qg->get('/q/account?aid=1', key => $good)->{status}, 200, 'a good request still works after the bad bodies');
$res = $qg->get('/q/account?aid=1&aid=2', key => $good);
$qg->expect_error($res, 400, 'param_invalid', 'GET with aid given twice', param => 'aid');
# In the body as in the query string: a repeated parameter is 400 param_invalid naming it; a
# repeated field of the body is 400 invalid_body naming it; a repeated key inside a jsonb value is
# the type's business (PostgreSQL keeps the last).
$res = $qg->request('POST', '/q/account', key => $good, content => '{"params": {"aid": 1, "aid": 2}}');
$qg->expect_error($res, 400, 'param_invalid', 'POST with aid given twice in params', param => 'aid');
$res = $qg->request('POST', '/q/account', key => $good, content => '{"params": {"aid": 1}, "page": 1, "page": 2}');
$qg->expect_error($res, 400, 'invalid_body', 'POST with the field page given twice', param => 'page');

# --- 413 payload_too_large: shrink querygate.max_body_size with a reload
my $big = json_encode({ params => { s => 'x' x 3000 } });
$res = $qg->request('POST', '/q/echo', key => $good, content => $big);
is($res->{status}, 200, 'a 3 kB body is fine with the default max_body_size') or diag(QuerygateTest::describe($res));
$qg->set_and_reload('querygate.max_body_size', '1kB');
my $streak = 0;
ok( poll_until(
		sub {
			my $r = $qg->request('POST', '/q/echo', key => $good, content => $big);
			$streak = $r->{status} == 413 ? $streak + 1 : 0;
			return $streak >= 6;
		}),
	'after max_body_size = 1kB and a reload, the 3 kB body is refused (6 times in a row)');
$res = $qg->request('POST', '/q/echo', key => $good, content => $big);
$qg->expect_error($res, 413, 'payload_too_large', 'POST of 3 kB over a max_body_size of 1kB');
my $huge = json_encode({ params => { s => 'y' x 200_000 } });
$res = $qg->request('POST', '/q/echo', key => $good, content => $huge);
$qg->expect_error($res, 413, 'payload_too_large', 'POST of 200 kB over a max_body_size of 1kB');
# The size is judged while the body is read, before anything else: a wrong key, or none, gets the
# same 413 (the key is never looked at, and nothing is served).
$res = $qg->request('POST', '/q/echo', key => $wrong, content => $big);
$qg->expect_error($res, 413, 'payload_too_large', 'oversized body with a wrong key');
$res = $qg->request('POST', '/q/echo', content => $big);
$qg->expect_error($res, 413, 'payload_too_large', 'oversized body without a key');
my $small = json_encode({ params => { s => 'x' x 900 } });
$res = $qg->request('POST', '/q/echo', key => $good, content => $small);
is($res->{status}, 200, 'a body under 1kB is still served') or diag(QuerygateTest::describe($res));
is(length(($res->{json} // [ {} ])->[0]{s} // ''), 900, 'and echoed whole');
is($qg->get('/q/account?aid=1', key => $good)->{status}, 200, 'the next request after a 413 is served');

done_testing();
