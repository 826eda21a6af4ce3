# Parameter rules (save_query(..., params => jsonb)): type, required, default, enum, min/max,
# min_length/max_length (characters), pattern (the whole value); every problem of a call listed at
# once in one 400 param_invalid "errors" object, before anything runs; save-time refusals (unknown
# rule, rule for a parameter the SQL lacks, a default breaking its own rules, a bad regular
# expression); from_claim parameters: 400 param_from_claim, 403 claim_missing, 403
# sign_in_required, and the value taken from the token.
use strict;
use warnings;
use utf8;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $jwt_secret = 'param-rules-test-secret-0123456789abcdef';
my $qg = QuerygateTest->start(name => 'param_rules', jwt_secret => $jwt_secret);
my $utf8 = $qg->sql('SHOW server_encoding') eq 'UTF8';
$qg->sql(q{
	CREATE ROLE gov_reader NOLOGIN;
	CREATE TABLE films (id int PRIMARY KEY, title text, rating text, year int, code text, price numeric);
	INSERT INTO films SELECT g, 'Film ' || g, (ARRAY['G', 'PG', 'R'])[g % 3 + 1], 1980 + g,
	                         'AB' || lpad(g::text, 2, '0'), g * 1.25
	  FROM generate_series(1, 40) g;
	CREATE TABLE docs (id int PRIMARY KEY, owner text, body text);
	INSERT INTO docs VALUES (1, 'alice', 'a1'), (2, 'alice', 'a2'), (3, 'bob', 'b1');
	GRANT SELECT ON films, docs TO gov_reader;
});

my %rules = (
	films => [ 'SELECT id FROM films WHERE rating = :rating AND year >= :year AND title LIKE :prefix || \'%\' AND code = coalesce(:code, code) ORDER BY id LIMIT :n',
		{
			rating => { enum => [ 'G', 'PG', 'R' ], description => 'the rating' },
			year => { type => 'integer', min => 1900, max => 2100 },
			n => { type => 'integer', min => 1, max => 100, default => 10 },
			prefix => { min_length => 1, max_length => 5 },
			code => { pattern => '[A-Z]{2}[0-9]{2}', required => JSON::PP::false },
		} ],
	typed => [ 'SELECT :i::text AS i, :x::text AS x, :b::text AS b, :s::text AS s',
		{ i => 'integer', x => { type => 'number' }, b => { type => 'boolean' }, s => { type => 'string', max_length => 3 } } ],
	levels => [ 'SELECT :lvl::int AS lvl, :price::numeric AS price',
		{ lvl => { enum => [ 1, 2, 3 ] }, price => { type => 'number', min => 0.5, max => 9.99, default => 1.5 } } ],
	nullable => [ 'SELECT coalesce(:tag::text, \'(none)\') AS tag, :note::text AS note',
		{ tag => { required => JSON::PP::false }, note => { default => undef } } ],
	unicode => [ 'SELECT :name::text AS name', { name => { min_length => 2, max_length => 5 } } ],
	my_docs => [ 'SELECT id, body FROM docs WHERE owner = :owner ORDER BY id', { owner => { from_claim => 'sub' } } ],
	my_doc => [ 'SELECT id, body FROM docs WHERE owner = :owner AND id = :id', { owner => { from_claim => 'sub' }, id => 'integer' } ],
);
for my $name (sort keys %rules)
{
	my ($sql, $params) = @{ $rules{$name} };
	$qg->sql('SELECT querygate.save_query(' . sql_quote($name) . ', ' . sql_quote($sql)
		  . ', params => ' . sql_quote(json_encode($params)) . ')');
}
my $key = $qg->access(policy => 'reader', run_as => 'gov_reader', queries => [ sort keys %rules ],
	jwt_issuers => ['https://issuer.test']);
my $now = time();
sub token { return jwt_hs256({ exp => $now + 3600, policy => 'reader', iss => 'https://issuer.test', %{ $_[0] } }, $jwt_secret); }

# Checks a 400 param_invalid (or another code) and its exact errors object.
sub invalid
{
	my ($res, $errors, $name, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$qg->expect_error($res, $o{status} // 400, $o{code} // 'param_invalid', $name);
	is_deeply($res->{json}{errors}, $errors, "$name: errors") or diag(QuerygateTest::describe($res));
}

sub ids { return [ map { { id => $_ } } @_ ]; }
my @g = grep { $_ % 3 == 0 } 1 .. 40;    # rating G (PG: 1 mod 3, R: 2 mod 3)

# --- valid calls, defaults
my $res = $qg->get('/q/films' . query_string(rating => 'G', year => 1900, prefix => 'Film'), key => $key);
$qg->expect_rows($res, ids(@g[ 0 .. 9 ]), 'valid call: n defaults to 10, code absent (not required) is NULL');
$res = $qg->get('/q/films' . query_string(rating => 'G', year => 1990, prefix => 'Fi', n => 2), key => $key);
$qg->expect_rows($res, ids(12, 15), 'valid call with n = 2 and year >= 1990');
$res = $qg->get('/q/films' . query_string(rating => 'PG', year => 1900, prefix => 'Film', code => 'AB04'), key => $key);
$qg->expect_rows($res, ids(4), 'a code matching the pattern');
$res = $qg->post('/q/films', { params => { rating => 'R', year => 2017, prefix => 'Film', n => 1 } }, key => $key);
$qg->expect_rows($res, ids(38), 'POST with JSON numbers for integer rules');
$res = $qg->post('/q/films', { params => { rating => 'R', year => '2017', prefix => 'Film', n => '1', code => undef } }, key => $key);
$qg->expect_rows($res, ids(38), 'POST with strings and a null code');

# --- each rule, alone
my @base = (rating => 'G', year => 1990, prefix => 'Film');
my %h = @base;
my @one = (
	[ 'enum', { rating => 'X' }, { rating => 'must be one of: G, PG, R' } ],
	[ 'enum is case-sensitive', { rating => 'g' }, { rating => 'must be one of: G, PG, R' } ],
	[ 'min', { year => 1899 }, { year => 'must be at least 1900' } ],
	[ 'max', { year => 2101 }, { year => 'must be at most 2100' } ],
	[ 'type integer (letters)', { year => '19x0' }, { year => 'must be an integer' } ],
	[ 'type integer (a decimal)', { year => '1999.5' }, { year => 'must be an integer' } ],
	[ 'min of a defaulted parameter', { n => 0 }, { n => 'must be at least 1' } ],
	[ 'max of a defaulted parameter', { n => 101 }, { n => 'must be at most 100' } ],
	[ 'min_length', { prefix => '' }, { prefix => 'must be at least 1 characters' } ],
	[ 'max_length', { prefix => 'Film 1' }, { prefix => 'must be at most 5 characters' } ],
	[ 'pattern: longer than a match', { code => 'AB123' }, { code => 'does not match the required pattern' } ],
	[ 'pattern: a match inside', { code => 'xAB12' }, { code => 'does not match the required pattern' } ],
	[ 'pattern: case', { code => 'ab12' }, { code => 'does not match the required pattern' } ],
);
for my $c (@one)
{
	my ($name, $change, $errors) = @$c;
	my %merged = (%h, %$change);
	$res = $qg->get('/q/films' . query_string(%merged), key => $key);
	invalid($res, $errors, "rule $name");
}

# --- every problem at once
$res = $qg->get('/q/films' . query_string(rating => 'X', year => 1800, prefix => 'Films!', n => 0, code => 'AB1', extra => 1),
	key => $key);
$qg->expect_error($res, 400, 'param_invalid', 'six problems in one call');
{
	is_deeply(
		$res->{json}{errors},
		{
			rating => 'must be one of: G, PG, R',
			year => 'must be at least 1900',
			prefix => 'must be at most 5 characters',
			n => 'must be at least 1',
			code => 'does not match the required pattern',
			extra => 'is not a parameter of this query'
		},
		'six problems in one call: all listed') or diag(QuerygateTest::describe($res));
	$res = $qg->get('/q/films' . query_string(year => 1990, prefix => 'Film', code => 'AB1'), key => $key);
	is_deeply([ $res->{status}, $res->{json}{code}, $res->{json}{errors} ],
		[ 400, 'param_invalid', { rating => 'is required', code => 'does not match the required pattern' } ],
		'a missing parameter and a pattern problem: param_invalid with both') or diag(QuerygateTest::describe($res));
}
$res = $qg->get('/q/films' . query_string(rating => 'X', year => 1800, prefix => 'Films!', n => 0), key => $key);
invalid(
	$res,
	{ rating => 'must be one of: G, PG, R', year => 'must be at least 1900', prefix => 'must be at most 5 characters', n => 'must be at least 1' },
	'four rule problems (no pattern) in one call: all listed');
$res = $qg->get('/q/films' . query_string(year => 1800, prefix => 'Film'), key => $key);
invalid($res, { rating => 'is required', year => 'must be at least 1900' }, 'a missing parameter and a broken rule: param_invalid with both');
$res = $qg->get('/q/films' . query_string(year => 1990), key => $key);
invalid($res, { rating => 'is required', prefix => 'is required' }, 'only missing parameters: param_required',
	code => 'param_required');
$res = $qg->post('/q/films', { params => { rating => 'X', year => 1800.5, prefix => 'Film' } }, key => $key);
invalid($res, { rating => 'must be one of: G, PG, R', year => 'must be an integer' }, 'POST: two problems');

# Names a reader decodes alike (two different invalid UTF-8 bytes, a real U+FFFD) are one member of
# "errors": a body with a repeated member name is refused by strict parsers.
$res = $qg->get('/q/films?rating=G&year=1990&prefix=Film&%A4=1&%9B=1&%EF%BF%BD=1', key => $key);
is_deeply([ $res->{status}, $res->{json}{code}, $res->{json}{errors} ],
	[ 400, 'param_invalid', { "\x{FFFD}" => 'is not a parameter of this query' } ],
	'three names read as U+FFFD: one member in errors') or diag(QuerygateTest::describe($res));
is(scalar(() = $res->{content} =~ /(?:\\ufffd|\xEF\xBF\xBD)"\s*:/g), 1,
	'the body names U+FFFD once') or diag($res->{content});

# --- types
$res = $qg->get('/q/typed' . query_string(i => '-12', x => '1.5e3', b => 'true', s => 'abc'), key => $key);
$qg->expect_rows($res, [ { i => '-12', x => '1.5e3', b => 'true', s => 'abc' } ], 'integer, number, boolean and string accepted');
$res = $qg->get('/q/typed' . query_string(i => '1.5', x => 'abc', b => 'yes', s => 'abcd'), key => $key);
invalid(
	$res,
	{ i => 'must be an integer', x => 'must be a number', b => 'must be true or false', s => 'must be at most 3 characters' },
	'a type rule narrows a text parameter: all four refused');
$res = $qg->post('/q/typed', { params => { i => 7, x => 0.25, b => JSON::PP::false, s => '' } }, key => $key);
$qg->expect_rows($res, [ { i => '7', x => '0.25', b => 'false', s => '' } ], 'POST: JSON number and boolean values');
$res = $qg->get('/q/typed' . query_string(i => '1e3', x => 'NaN', b => 'TRUE', s => 'ok'), key => $key);
invalid($res, { i => 'must be an integer', x => 'must be a number', b => 'must be true or false' },
	'1e3 is not an integer, NaN not a number, TRUE not a boolean');

# --- enum of numbers, min/max of numbers, defaults
$res = $qg->get('/q/levels?lvl=2', key => $key);
$qg->expect_rows($res, [ { lvl => 2, price => 1.5 } ], 'numeric enum value; the numeric default');
$res = $qg->get('/q/levels?lvl=4&price=0.4', key => $key);
invalid($res, { lvl => 'must be one of: 1, 2, 3', price => 'must be at least 0.5' }, 'numeric enum and min');
$res = $qg->get('/q/levels?lvl=3&price=9.991', key => $key);
invalid($res, { price => 'must be at most 9.99' }, 'a fractional max');
$res = $qg->get('/q/levels?lvl=3&price=9.99', key => $key);
$qg->expect_rows($res, [ { lvl => 3, price => 9.99 } ], 'the max itself is allowed');
$res = $qg->get('/q/nullable', key => $key);
$qg->expect_rows($res, [ { tag => '(none)', note => undef } ], 'not required: NULL; default null: NULL');
$res = $qg->get('/q/nullable?tag=x&note=y', key => $key);
$qg->expect_rows($res, [ { tag => 'x', note => 'y' } ], 'given values override');

# --- lengths count characters, not bytes
SKIP:
{
	skip 'the database encoding is not UTF8', 4 unless $utf8;
	$res = $qg->get('/q/unicode' . query_string(name => 'ééééé'), key => $key);
	$qg->expect_rows($res, [ { name => 'ééééé' } ], 'five two-byte characters within max_length 5');
	$res = $qg->get('/q/unicode' . query_string(name => 'éééééé'), key => $key);
	invalid($res, { name => 'must be at most 5 characters' }, 'six characters over max_length 5');
}

# --- refused at save time, and nothing saved or replaced
my $before = $qg->sql(q{SELECT param_rules::text FROM querygate.queries WHERE name = 'films'});
my @bad = (
	[ 'an unknown rule', 'SELECT :a::int AS a', { a => { colour => 'red' } }, qr/unknown rule "colour"/ ],
	[ 'a rule for a parameter the SQL lacks', 'SELECT :a::int AS a', { b => { type => 'integer' } },
		qr/parameter "b" has rules but is not used/ ],
	[ 'a default below its min', 'SELECT :a::int AS a', { a => { min => 1, default => 0 } }, qr/default must be at least 1/ ],
	[ 'a default outside its enum', 'SELECT :a::text AS a', { a => { enum => [ 'x', 'y' ], default => 'z' } }, qr/default must be one of/ ],
	[ 'a default too long', 'SELECT :a::text AS a', { a => { max_length => 2, default => 'abc' } }, qr/default must be at most 2/ ],
	[ 'a default of the wrong type', 'SELECT :a::int AS a', { a => { type => 'integer', default => 'ten' } }, qr/default must be an integer/ ],
	[ 'a default not matching its pattern', 'SELECT :a::text AS a', { a => { pattern => '[a-z]+', default => 'ABC' } },
		qr/default of parameter "a" does not match its pattern/ ],
	[ 'an unknown type', 'SELECT :a::int AS a', { a => { type => 'integr' } }, qr/type/ ],
	[ 'min greater than max', 'SELECT :a::int AS a', { a => { min => 5, max => 1 } }, qr/min is greater than max/ ],
	[ 'an empty enum', 'SELECT :a::int AS a', { a => { enum => [] } }, qr/enum must be a non-empty array/ ],
	[ 'required with a default', 'SELECT :a::int AS a', { a => { required => JSON::PP::true, default => 1 } }, qr/cannot be required/ ],
	[ 'from_claim with a default', 'SELECT :a::text AS a', { a => { from_claim => 'sub', default => 'x' } }, qr/from_claim/ ],
	[ 'not an object', 'SELECT :a::int AS a', [ 1, 2 ], qr/JSON object/ ],
);
for my $b (@bad)
{
	my ($name, $sql, $params, $re) = @$b;
	my $err = sql_error($qg, 'SELECT querygate.save_query(\'films\', ' . sql_quote($sql) . ', params => '
		  . sql_quote(json_encode($params)) . ')');
	like($err, qr/^22023 .*$re/, "save_query refuses $name (22023)") or diag($err);
}
my $err = sql_error($qg, q{SELECT querygate.save_query('films', 'SELECT :a::text AS a', params => '{"a": {"pattern": "[a-z"}}')});
like($err, qr/^2201B .*regular expression/i, 'save_query refuses a bad regular expression (2201B)') or diag($err);
$err = sql_error($qg, q{SELECT querygate.save_query('films', 'SELECT :a::text AS a', params => '{"a": {"pattern": "(", "default": "x"}}')});
like($err, qr/^2201B /, 'save_query refuses a bad regular expression with a default') or diag($err);
is($qg->sql(q{SELECT param_rules::text FROM querygate.queries WHERE name = 'films'}), $before,
	'every refused save left the saved query as it was');
$res = $qg->get('/q/films' . query_string(rating => 'G', year => 2019, prefix => 'Film'), key => $key);
$qg->expect_rows($res, ids(grep { 1980 + $_ >= 2019 } @g), 'and it still answers with its rules');

# --- from_claim
my $alice = token({ sub => 'alice' });
my $bob = token({ sub => 'bob' });
$res = $qg->get('/q/my_docs', bearer => $alice);
$qg->expect_rows($res, [ { id => 1, body => 'a1' }, { id => 2, body => 'a2' } ], 'from_claim: the value comes from the token (alice)');
$res = $qg->post('/q/my_docs', { params => {} }, bearer => $bob);
$qg->expect_rows($res, [ { id => 3, body => 'b1' } ], 'from_claim: the value comes from the token (bob, POST)');
$res = $qg->get('/q/my_doc?id=3', bearer => $alice);
$qg->expect_rows($res, [], 'alice cannot read bob\'s document by id');
$res = $qg->get('/q/my_doc?id=2', bearer => $alice);
$qg->expect_rows($res, [ { id => 2, body => 'a2' } ], 'alice reads her own document by id');

$res = $qg->get('/q/my_docs?owner=bob', bearer => $alice);
invalid($res, { owner => 'comes from the caller\'s token and cannot be sent' }, 'a token caller sending the claimed parameter (GET)',
	code => 'param_from_claim');
$res = $qg->post('/q/my_docs', { params => { owner => 'bob' } }, bearer => $alice);
$qg->expect_error($res, 400, 'param_from_claim', 'a token caller sending the claimed parameter (POST)', param => 'owner');
$res = $qg->get('/q/my_docs?owner=alice', key => $key);
$qg->expect_error($res, 400, 'param_from_claim', 'a key caller sending the claimed parameter', param => 'owner');
$res = $qg->get('/q/my_docs', key => $key);
$qg->expect_error($res, 403, 'sign_in_required', 'a key caller');
$res = $qg->get('/q/my_doc?id=1', key => $key);
$qg->expect_error($res, 403, 'sign_in_required', 'a key caller, with the other parameter given');
$res = $qg->get('/q/my_docs', bearer => token({}));
$qg->expect_error($res, 403, 'claim_missing', 'a token without the claim');
$res = $qg->get('/q/my_docs', bearer => token({ sub => [ 'alice' ] }));
$qg->expect_error($res, 403, 'claim_missing', 'a token whose claim is not a scalar');

done_testing();
