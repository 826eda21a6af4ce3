# JWT bearer tokens: HS256 (the keys of querygate.jwt_secret_file, signed here with Digest::SHA), RS256 and ES256
# (a JWKS stored with set_jwks; keys made and tokens signed with the openssl command). Every bad
# token - alg none, algorithm confusion, wrong key, tampered, expired, not yet valid, issued in the
# future, wrong issuer or audience, no policy claim - is the byte-identical 401 of a bad key. A
# valid token's policy claim chooses the policy; its claims are visible to SQL as
# current_setting('request.jwt.claims').
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $secret = 'jwt-test-hs256-secret-0123456789abcdef';
my $qg = QuerygateTest->start(name => 'jwt', jwt_secret => $secret);
$qg->sql(q{
	CREATE ROLE gov_reader NOLOGIN;
	CREATE ROLE gov_other NOLOGIN;
	CREATE TABLE accounts (aid int PRIMARY KEY, abalance int);
	INSERT INTO accounts VALUES (1, 10), (2, 20);
	GRANT SELECT ON accounts TO gov_reader, gov_other;
	SELECT querygate.save_query('whoami', 'SELECT current_user::text AS role, current_setting(''request.jwt.claims'', true) AS claims');
	SELECT querygate.save_query('claims', 'SELECT current_setting(''request.jwt.claims'')::jsonb AS c, current_setting(''request.jwt.claims'')::jsonb ->> ''sub'' AS sub');
	SELECT querygate.save_query('account', 'SELECT aid, abalance FROM accounts WHERE aid = :aid');
	SELECT querygate.save_query('other_only', 'SELECT 42 AS answer');
});
my $key = $qg->access(policy => 'jwt_reader', run_as => 'gov_reader', queries => [qw(whoami claims account)],
	jwt_issuers => [ 'https://issuer.test', 'https://issuer.example' ]);
$qg->access(policy => 'jwt_other', run_as => 'gov_other', queries => [qw(whoami claims other_only)], key => undef,
	jwt_issuers => ['https://issuer.test']);

# --- keys and the JWKS
my $dir = PostgreSQL::Test::Utils::tempdir();
my $rsa = openssl_key($dir, 'rsa', 'rsa1');
my $rsa_other = openssl_key($dir, 'rsa', 'rsa_other');
my $ec = openssl_key($dir, 'ec', 'ec1');
my $ec_other = openssl_key($dir, 'ec', 'ec_other');
my $jwks = {
	keys => [
		rsa_jwk($rsa, kid => 'rsa1', alg => 'RS256', use => 'sig'),
		ec_jwk($ec, kid => 'ec1', alg => 'ES256', use => 'sig'),
		{ %{ rsa_jwk($rsa_other, kid => 'enc1') }, use => 'enc' },    # an encryption key: never used to verify
	]
};
$qg->sql('SELECT querygate.set_jwks(' . sql_quote(json_encode($jwks)) . ')');
like(sql_error($qg, q{SELECT querygate.set_jwks('{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]}')}), qr/^22023 .*JWKS/,
	'set_jwks refuses a short RSA key (22023)');
like(sql_error($qg, q{SELECT querygate.set_jwks('{"nokeys": []}')}), qr/^22023 /, 'set_jwks refuses a document without keys');

my $now = time();
my %claims = (sub => 'user-1', policy => 'jwt_reader', iss => 'https://issuer.test', exp => $now + 600, iat => $now, nbf => $now - 5, role_hint => 'x');
sub claims { return { %claims, @_ }; }
sub hs { return jwt_hs256(claims(@_), $secret); }
# The JSON text of valid claims with one more member (a claim they already have) at the end.
sub with_repeated
{
	my ($member) = @_;
	my $text = json_encode(claims());
	$text =~ s/\}$/,$member}/;
	return $text;
}

my $rid = 'jwt-test';
my $bad = $qg->get('/q/whoami', key => 'qg_' . ('B' x 43), headers => { 'X-Request-Id' => $rid });
$qg->expect_error($bad, 401, 'unauthorized', 'a bad key');

sub call
{
	my ($token, $path) = @_;
	return $qg->get($path // '/q/whoami', bearer => $token, headers => { 'X-Request-Id' => $rid });
}

sub accepted
{
	my ($token, $name, $role) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = call($token);
	is($res->{status}, 200, "$name: 200") or diag(QuerygateTest::describe($res));
	my $row = ref $res->{json} eq 'ARRAY' ? $res->{json}[0] : {};
	is($row->{role} // '', $role // 'gov_reader', "$name: runs as the policy's role");
	return $res;
}

# A refused token: 401 invalid_token (token_expired past its exp) with why, in the body and in
# RFC 6750's challenge (its error_description in the characters its grammar allows); $why, when
# given, is the reason expected.
sub refused
{
	my ($token, $name, $path, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = call($token, $path);
	my $code = $o{code} // 'invalid_token';
	$qg->expect_error($res, 401, $code, $name);
	return is($res->{headers}{'www-authenticate'}, 'Bearer', "$name: a key's plain challenge")
	  if $code eq 'unauthorized';
	my $why = ref $res->{json} eq 'HASH' ? $res->{json}{error} // '' : '';
	like($why, $o{why} // qr/^(the|an|no) /, "$name: says why");
	is($res->{headers}{'www-authenticate'}, qq{Bearer error="invalid_token", error_description="$why"},
		"$name: WWW-Authenticate as RFC 6750 says it")
	  if $why =~ /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/;
}

# --- valid tokens
my $res = accepted(hs(), 'HS256');
is_deeply(json_decode(ref $res->{json} eq 'ARRAY' ? $res->{json}[0]{claims} : ''), claims(),
	'HS256: request.jwt.claims holds every claim');
accepted(jwt_openssl('RS256', $rsa, claims(), kid => 'rsa1'), 'RS256 with kid');
accepted(jwt_openssl('RS256', $rsa, claims()), 'RS256 without kid');
accepted(jwt_openssl('ES256', $ec, claims(), kid => 'ec1'), 'ES256 with kid');
accepted(jwt_openssl('ES256', $ec, claims()), 'ES256 without kid');
accepted(hs(nbf => $now + 10), 'nbf 10 s ahead (within the 30 s leeway)');
accepted(hs(iat => $now + 10), 'iat 10 s ahead (within the 30 s leeway)');
accepted(hs(aud => 'anyone'), 'aud is not checked while querygate.jwt_audience is unset');

$res = $qg->get('/q/claims', bearer => hs(sub => 'user-7'));
$qg->expect_rows($res, [ { c => claims(sub => 'user-7'), sub => 'user-7' } ],
	'current_setting(\'request.jwt.claims\') as jsonb, and a claim from it');
$res = $qg->get('/q/account?aid=2', bearer => jwt_openssl('ES256', $ec, claims(), kid => 'ec1'));
$qg->expect_rows($res, [ { aid => 2, abalance => 20 } ], 'ES256 token calling a query with a parameter');

# The policy claim chooses the policy.
accepted(hs(policy => 'jwt_other'), 'policy claim jwt_other', 'gov_other');
$res = $qg->get('/q/other_only', bearer => hs(policy => 'jwt_other'));
$qg->expect_rows($res, [ { answer => 42 } ], 'jwt_other: its own query');
$res = $qg->get('/q/other_only', bearer => hs());
$qg->expect_error($res, 404, 'query_not_found', 'jwt_reader: a query granted only to jwt_other');
$res = $qg->get('/q/account?aid=1', bearer => hs(policy => 'jwt_other'));
$qg->expect_error($res, 404, 'query_not_found', 'jwt_other: a query granted only to jwt_reader');

# A token reaches only a policy that accepts its issuer by name.
accepted(hs(iss => 'https://issuer.example'), 'jwt_reader accepts a second issuer');
refused(hs(policy => 'jwt_other', iss => 'https://issuer.example'), 'jwt_other does not accept that issuer',
	undef, why => qr/^no policy accepts this token$/);
my %no_iss = %claims;
delete $no_iss{iss};
refused(jwt_hs256(\%no_iss, $secret), 'a token without iss reaches no policy');
refused(hs(iss => ['https://issuer.test']), 'an iss that is not a string');
$qg->access(policy => 'jwt_none', run_as => 'gov_reader', queries => ['whoami'], key => undef);
refused(hs(policy => 'jwt_none'), 'a policy that accepts no issuer is not reachable by token');
$qg->sql(q{SELECT querygate.set_policy('jwt_none', jwt_issuers => ARRAY['https://issuer.test'])});
ok(poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => hs(policy => 'jwt_none')) }, sub { $_[0]{status} == 200 }),
	'set_policy(jwt_issuers) makes it reachable at the next call');
is($qg->sql(q{SELECT jwt_issuers FROM querygate.policy WHERE name = 'jwt_none'}), '{https://issuer.test}',
	'the issuers are kept in querygate.policy');
$qg->sql(q{SELECT querygate.set_policy('jwt_none', jwt_issuers => '{}')});
ok(poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => hs(policy => 'jwt_none')) }, sub { $_[0]{status} == 401 }),
	'and jwt_issuers => \'{}\' unreachable again');
like(sql_error($qg, q{SELECT querygate.set_policy('jwt_none', jwt_issuers => ARRAY['https://issuer.test', NULL])}),
	qr/^22023 jwt_issuers must not hold NULL/, 'set_policy refuses a NULL issuer (22023)');
like(sql_error($qg, q{SELECT querygate.set_policy('jwt_none', jwt_issuers => ARRAY[''])}),
	qr/^22023 /, 'and an empty one');

# The claims are transaction-local: a key's call right after sees none.
my $seen_claims = 0;
for (1 .. 4)
{
	call(hs());
	my $r = $qg->get('/q/whoami', key => $key);
	$seen_claims++ if $r->{status} != 200 || (defined $r->{json}[0]{claims} && length $r->{json}[0]{claims});
}
is($seen_claims, 0, 'a key call right after a token call sees no request.jwt.claims');
$res = $qg->get('/q/claims', key => $key);
$qg->expect_error($res, 500, 'query_failed', 'current_setting(\'request.jwt.claims\') without missing_ok, key call');

# --- bad tokens: each the 401 of a bad key
my $valid = hs();
my ($h, $p, $s) = split /\./, $valid;
my $rsa_pub = public_pem($rsa);
my @bad = (
	[ 'alg none', jwt_unsigned(claims()) ],
	[ 'alg none with a signature', jwt_unsigned(claims()) . 'c2ln' ],
	[ 'alg None', jwt_unsigned(claims(), alg => 'None') ],
	[ 'alg HS512', do { my $t = jwt_hs256(claims(), $secret, alg => 'HS512'); $t } ],
	[ 'HS256 with an empty signature', "$h.$p." ],
	[ 'HS256 signed with another secret', jwt_hs256(claims(), 'another-secret-0123456789abcdef-0123'),
		qr/^the HS256 signature does not verify$/ ],
	[ 'HS256 signed with the secret plus a byte', jwt_hs256(claims(), "${secret}x") ],
	[ 'algorithm confusion: HS256 HMAC\'d with the RSA public key PEM', jwt_hs256(claims(), $rsa_pub, kid => 'rsa1') ],
	[ 'algorithm confusion: HS256 HMAC\'d with the RSA modulus', jwt_hs256(claims(), b64url_decode($jwks->{keys}[0]{n}), kid => 'rsa1') ],
	[ 'RS256 signed with a key outside the JWKS', jwt_openssl('RS256', $rsa_other, claims(), kid => 'rsa1') ],
	[ 'RS256 signed with a key outside the JWKS, no kid', jwt_openssl('RS256', $rsa_other, claims()) ],
	[ 'RS256 signed with the encryption key of the JWKS', jwt_openssl('RS256', $rsa_other, claims(), kid => 'enc1') ],
	[ 'RS256 naming the EC key', jwt_openssl('RS256', $rsa, claims(), kid => 'ec1') ],
	[ 'RS256 with an unknown kid', jwt_openssl('RS256', $rsa, claims(), kid => 'nope') ],
	[ 'ES256 signed with a key outside the JWKS', jwt_openssl('ES256', $ec_other, claims(), kid => 'ec1') ],
	[ 'ES256 naming the RSA key', jwt_openssl('ES256', $ec, claims(), kid => 'rsa1') ],
	[ 'ES256 signature in DER, not r||s', do {
			my $t = jwt_openssl('ES256', $ec, claims(), kid => 'ec1');
			my ($a, $b) = split /\./, $t;
			open my $fh, '<:raw', "$ec.sig" or die;
			local $/;
			my $der = <$fh>;
			"$a.$b." . b64url($der);
		} ],
	[ 'PS256 header on an RS256 signature', do {
			my $t = jwt_openssl('RS256', $rsa, claims(), kid => 'rsa1');
			my (undef, $b, $c) = split /\./, $t;
			b64url(json_encode({ alg => 'PS256', typ => 'JWT', kid => 'rsa1' })) . ".$b.$c";
		} ],
	[ 'tampered payload (another policy)', "$h." . b64url(json_encode(claims(policy => 'jwt_other'))) . ".$s" ],
	[ 'tampered payload (a later exp)', "$h." . b64url(json_encode(claims(exp => $now + 99999))) . ".$s" ],
	[ 'tampered header (alg RS256)', b64url(json_encode({ alg => 'RS256', typ => 'JWT' })) . ".$p.$s" ],
	[ 'padded base64url signature', "$h.$p.$s=" ],
	[ 'a crit header', jwt_hs256(claims(), $secret, crit => ['exp']) ],
	[ 'expired an hour ago', hs(exp => $now - 3600), qr/^the token has expired$/, 'token_expired' ],
	[ 'expired two minutes ago', hs(exp => $now - 120), qr/^the token has expired$/, 'token_expired' ],
	[ 'no exp', jwt_hs256({ map { $_ => $claims{$_} } grep { $_ ne 'exp' } keys %claims }, $secret) ],
	[ 'exp as a string', hs(exp => '' . ($now + 600)) ],
	[ 'not yet valid (nbf in an hour)', hs(nbf => $now + 3600) ],
	[ 'not yet valid (nbf in two minutes)', hs(nbf => $now + 120) ],
	[ 'issued in the future (iat in an hour)', hs(iat => $now + 3600) ],
	[ 'no policy claim', jwt_hs256({ map { $_ => $claims{$_} } grep { $_ ne 'policy' } keys %claims }, $secret) ],
	[ 'a policy claim naming no policy', hs(policy => 'no_such_policy'), qr/^no policy accepts this token$/ ],
	[ 'a policy claim that is not a string', hs(policy => [ 'jwt_reader' ]) ],
	[ 'RS256 expired', jwt_openssl('RS256', $rsa, claims(exp => $now - 3600), kid => 'rsa1'), qr/^the token has expired$/,
		'token_expired' ],
	[ 'ES256 not yet valid', jwt_openssl('ES256', $ec, claims(nbf => $now + 3600), kid => 'ec1') ],
	# A claim given twice (RFC 7519 lets a verifier refuse it; which copy wins would depend on
	# the parser): refused, whatever the second copy says.
	[ 'two policy claims, the second another policy', jwt_hs256(with_repeated('"policy":"jwt_other"'), $secret) ],
	[ 'two exp claims, the second expired', jwt_hs256(with_repeated('"exp":' . ($now - 3600)), $secret) ],
	[ 'two exp claims, the second later', jwt_hs256(with_repeated('"exp":' . ($now + 99999)), $secret) ],
	# Not three dot-separated parts: not a JWT, so judged as a key (the key's plain 401).
	[ 'two parts', "$h.$p", undef, 'unauthorized' ],
	[ 'four parts', "$h.$p.$s.$s", undef, 'unauthorized' ],
	[ 'not base64url', "$h.$p.\$\$\$" ],
);
refused($_->[1], $_->[0], undef, why => $_->[2], code => $_->[3]) for @bad;
$res = $qg->get('/q/whoami', key => hs(), headers => { 'X-Request-Id' => $rid });
is("$res->{status} $res->{content}", "401 $bad->{content}", 'a JWT sent as X-API-Key is judged as a key: 401');
$res = $qg->get('/q/no_such_query', bearer => jwt_unsigned(claims()), headers => { 'X-Request-Id' => $rid });
$qg->expect_error($res, 401, 'invalid_token', 'alg none calling an unknown query: 401, not 404');
# The operator reads why in the access log, with the request id.
$qg->set_and_reload('querygate.log_requests', 'errors');
my $log_from = -s $qg->node->logfile;
ok(poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => hs(exp => $now - 60),
				headers => { 'X-Request-Id' => 'jwt-expired-log' }) },
		sub { $qg->node->log_contains('request_id=jwt-expired-log .*reason="the token has expired"', $log_from) }),
	'the access log says why a token was refused');
$res = call(hs(policy => 'no_such_policy'));
ok(poll_until(sub { $qg->node->log_contains('reason="the token\'s policy .+no_such_policy.+ does not exist"', $log_from) }),
	'and which policy the token named, which its caller is not told');
$qg->set_and_reload('querygate.log_requests', 'off');

# --- issuer and audience
$qg->sql(q{ALTER SYSTEM SET querygate.jwt_issuer = 'https://issuer.example'; ALTER SYSTEM SET querygate.jwt_audience = 'querygate-api'});
$qg->sql('SELECT pg_reload_conf()');
ok(poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => hs()) }, sub { $_[0]{status} == 401 }),
	'jwt_issuer and jwt_audience reached every worker');
my %ia = (iss => 'https://issuer.example', aud => 'querygate-api');
accepted(hs(%ia), 'the configured iss and aud');
accepted(hs(%ia, aud => [ 'other', 'querygate-api' ]), 'aud as an array holding the audience');
accepted(jwt_openssl('RS256', $rsa, claims(%ia), kid => 'rsa1'), 'RS256 with the configured iss and aud');
refused(hs(%ia, iss => 'https://evil.example'), 'a wrong issuer');
refused(hs(%ia, iss => 'https://issuer.example/'), 'an issuer with a trailing slash');
refused(hs(aud => 'querygate-api'), 'no issuer');
refused(hs(%ia, aud => 'other-api'), 'a wrong audience');
refused(hs(%ia, aud => [ 'other', 'api' ]), 'an audience array without the audience');
refused(hs(iss => 'https://issuer.example'), 'no audience');
refused(jwt_openssl('ES256', $ec, claims(%ia, aud => 'x'), kid => 'ec1'), 'ES256 with a wrong audience');
$qg->sql(q{ALTER SYSTEM RESET querygate.jwt_issuer; ALTER SYSTEM RESET querygate.jwt_audience});
$qg->sql('SELECT pg_reload_conf()');
ok(poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => hs()) }, sub { $_[0]{status} == 200 }),
	'issuer and audience unset again');

# --- another policy claim
$qg->set_and_reload('querygate.jwt_policy_claim', 'qg_policy');
ok(poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => hs()) }, sub { $_[0]{status} == 401 }),
	'jwt_policy_claim = qg_policy reached every worker');
accepted(hs(policy => undef, qg_policy => 'jwt_other'), 'the policy named by the qg_policy claim', 'gov_other');
refused(hs(), 'a token with only the policy claim, once the claim is qg_policy');
$qg->sql('ALTER SYSTEM RESET querygate.jwt_policy_claim; SELECT pg_reload_conf()');
ok(poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => hs()) }, sub { $_[0]{status} == 200 }),
	'jwt_policy_claim back to policy');

# --- the JWKS removed: RS256 and ES256 refused from the next call; HS256 still works
$qg->sql('SELECT querygate.set_jwks(NULL)');
refused(jwt_openssl('RS256', $rsa, claims(), kid => 'rsa1'), 'RS256 once the JWKS is removed');
refused(jwt_openssl('ES256', $ec, claims(), kid => 'ec1'), 'ES256 once the JWKS is removed');
accepted(hs(), 'HS256 without a JWKS');
$qg->sql('SELECT querygate.set_jwks(' . sql_quote(json_encode({ keys => [ ec_jwk($ec, kid => 'ec1') ] })) . ')');
accepted(jwt_openssl('ES256', $ec, claims(), kid => 'ec1'), 'ES256 once a JWKS holds its key again');
refused(jwt_openssl('RS256', $rsa, claims(), kid => 'rsa1'), 'RS256 whose key is no longer in the JWKS');

# --- the HS256 keys: in a file only the server's user may read, never in a setting; at least 32
# bytes each; two at once while one is rotated
my $secret2 = 'jwt-test-hs256-rotated-in-0123456789abcdef';
sub hs_with { return jwt_hs256(claims(), $_[0]); }
sub reload_until
{
	my ($token, $status) = @_;
	$qg->sql('SELECT pg_reload_conf()');
	return poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => $token) },
		sub { $_[0]{status} == $status });
}
$qg->write_secret_file('jwt.key', [ $secret, $secret2 ]);
ok(reload_until(hs_with($secret2), 200), 'rotation: a second key in the file verifies its tokens');
accepted(hs(), 'rotation: the first key still verifies its own');
$qg->write_secret_file('jwt.key', [$secret2]);
ok(reload_until(hs(), 401), 'rotation: the first key retired, its tokens are refused');
accepted(hs_with($secret2), 'rotation: the second key alone verifies');
my $log_offset = -s $qg->node->logfile;
$qg->write_secret_file('jwt.key', [$secret2], 0640);
ok(reload_until(hs_with($secret2), 401), 'a key file its group may read: HS256 tokens are refused');
ok(poll_until(sub { $qg->node->log_contains('HS256 bearer tokens are refused: secret file .*jwt\.key.*\(0600\)', $log_offset) }),
	'the log names the file and the mode it needs');
unlike(slurp_file($qg->node->logfile, $log_offset), qr/\Q$secret2\E|\Q$secret\E/, 'and never a key');
$res = $qg->get('/q/account?aid=1', key => $key);
is($res->{status}, 200, 'keys still work while the HS256 keys are refused');
$qg->write_secret_file('jwt.key', 'too-short');
ok(reload_until(jwt_hs256(claims(), 'too-short'), 401), 'a key under 32 bytes: HS256 tokens are refused');
refused(hs_with($secret2), 'HS256 signed with a key no longer in the file');
$qg->write_secret_file('jwt.key', $secret);
ok(reload_until(hs(), 200), 'the key file mended: HS256 accepted again');
$qg->set_and_reload('querygate.jwt_secret_file', '');
ok(poll_fresh(sub { fresh_request($qg, 'GET', '/q/whoami', bearer => hs()) },
		sub { $_[0]{status} == 401 }), 'no key file: HS256 refused');
refused(jwt_hs256(claims(), ''), 'HS256 with no key file (signed with the empty key)');
refused(hs(), 'HS256 with no key file (signed with the old key)');

# Algorithm confusion with no HS256 secret at all and the RSA key in the JWKS: an HS256 token is
# never checked against a public key, whatever form of it was used as the HMAC key.
$qg->sql('SELECT querygate.set_jwks(' . sql_quote(json_encode({ keys => [ rsa_jwk($rsa, kid => 'rsa1') ] })) . ')');
accepted(jwt_openssl('RS256', $rsa, claims(), kid => 'rsa1'), 'RS256 with the RSA key back in the JWKS');
(my $pem_trimmed = $rsa_pub) =~ s/\s+$//;
my $rsa_der_file = "$rsa.pub.der";
run_command([ 'openssl', 'pkey', '-in', $rsa, '-pubout', '-outform', 'DER', '-out', $rsa_der_file ]);
my $rsa_der = do { open my $fh, '<:raw', $rsa_der_file or die; local $/; <$fh> };
for my $c ([ 'the public key PEM', $rsa_pub ], [ 'the PEM without its last newline', $pem_trimmed ],
	[ 'the public key DER', $rsa_der ], [ 'the JWK JSON', json_encode(rsa_jwk($rsa, kid => 'rsa1')) ],
	[ 'the modulus bytes', b64url_decode(rsa_jwk($rsa)->{n}) ])
{
	refused(jwt_hs256(claims(), $c->[1], kid => 'rsa1'), "algorithm confusion, no HS256 secret: HS256 keyed with $c->[0]");
	refused(jwt_hs256(claims(), $c->[1]), "algorithm confusion, no HS256 secret, no kid: HS256 keyed with $c->[0]");
}

done_testing();
