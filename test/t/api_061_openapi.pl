# GET /openapi.json and GET /catalog (src/http/openapi.hpp, src/call/api_describer.hpp): per caller,
# only what its key may call (a query not granted, one its policy refuses, and a parameter taken
# from the token are left out); parameters with their types and rules, columns as the policy serves
# them (hashed, masked, dropped); the OpenAPI 3.1 document passes Redocly's linter, and a TypeScript
# client generated from it (openapi-typescript) type-checks, while one that sends a parameter of the
# wrong type does not. POST /sql and GET /schema are there only for a policy granted SQL of its
# own, and that document passes the linter too.
use strict;
use warnings;
use FindBin;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $clients = "$FindBin::Bin/../clients/node_modules/.bin";
my $secret = 'a-test-secret-of-at-least-32-bytes-long';
my $qg = QuerygateTest->start(name => 'openapi',
	jwt_secret => $secret,
	conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE TABLE oa_people (id int PRIMARY KEY, name text, ssn text, secret text, born date, meta jsonb,
	                        score numeric, tenant text);
	CREATE TABLE oa_hidden (id int);
	INSERT INTO oa_people VALUES (1, 'Jane', '123', 's', '1990-01-02', '{"a": 1}', 1.5, 't1');
	SELECT querygate.save_query('oa_people', 'SELECT id, name, ssn, secret, born, meta, score FROM oa_people WHERE id = :id',
	  'one person by id', '{"id": {"type": "integer", "min": 1, "max": 1000, "description": "the person"}}');
	SELECT querygate.save_query('oa_search', 'SELECT id FROM oa_people WHERE tenant ~ :q AND :kind::text IN (''a'', ''b'') LIMIT :lim::int',
	  NULL, '{"q": {"pattern": "[A-Za-z]+", "example": "Ab"}, "kind": {"enum": ["a", "b"]}, "lim": {"type": "integer", "default": 10}}');
	SELECT querygate.save_query('oa_odd', 'SELECT id FROM oa_people WHERE tenant ~ :q', NULL, '{"q": {"pattern": "\\\\m[[:alpha:]]+"}}');
	SELECT querygate.save_query('oa_mine', 'SELECT id FROM oa_people WHERE tenant = :tenant', NULL,
	  '{"tenant": {"from_claim": "tenant"}}');
	SELECT querygate.save_query('oa_touch', 'UPDATE oa_people SET score = score + :by WHERE id = :id');
	SELECT querygate.save_query('oa_refused', 'SELECT id FROM oa_hidden');
	CREATE TABLE oa_gone (id int);
	SELECT querygate.save_query('oa_gone', 'SELECT id FROM oa_gone');
	SELECT querygate.save_query('oa_guess', 'SELECT id FROM oa_people WHERE name = :name');
	SELECT querygate.save_query('oa_other', 'SELECT 1 AS one');
	CREATE TABLE oa_codes (code int);
	INSERT INTO oa_codes VALUES (7);
	SELECT querygate.save_query('oa_codes', 'SELECT code FROM oa_codes');
});
$qg->role('oa_role', select => [qw(oa_people oa_hidden)]);
$qg->sql('GRANT UPDATE ON oa_people TO oa_role');
my $key = $qg->access(policy => 'oa_pol', run_as => 'oa_role', jwt_issuers => ['https://issuer.test'],
	queries => [qw(oa_people oa_search oa_odd oa_mine oa_touch oa_refused oa_guess oa_gone)],
	setup => q{
		SELECT querygate.allow_tables('oa_pol', ARRAY['oa_people']::regclass[]);
		SELECT querygate.grant_writes('oa_pol', '{update}');
		SELECT querygate.mask('oa_pol', 'public.oa_people.ssn', 'hash');
		-- forced: oa_guess, granted, filters on it and is refused from now on (as it should be here)
		SELECT querygate.mask('oa_pol', 'public.oa_people.name', 'mask', force => true);
		SELECT querygate.mask('oa_pol', 'public.oa_people.secret', 'drop');
	});
$qg->sql('DROP TABLE oa_gone');
$qg->sql('GRANT SELECT ON oa_codes TO oa_role');
my $other_key = $qg->access(policy => 'oa_other_pol', run_as => 'oa_role', queries => [qw(oa_other oa_codes)],
	setup => q{SELECT querygate.mask('oa_other_pol', 'public.oa_codes.code', 'hash');});

$qg->expect_error($qg->get('/openapi.json'), 401, 'unauthorized', 'without a key');
$qg->expect_error($qg->get('/catalog'), 401, 'unauthorized', 'the catalog without a key');
my $res = $qg->get('/openapi.json', key => $key);
is($res->{status}, 200, 'GET /openapi.json with a key: 200');
my $doc = $res->{json};
is($doc->{openapi}, '3.1.0', 'OpenAPI 3.1');
is_deeply([ sort keys %{ $doc->{paths} } ], [qw(/q/oa_odd /q/oa_people /q/oa_search /q/oa_touch)],
	'a path for each query the key may call: not oa_gone (its table was dropped: it cannot be planned, '
	  . 'and the queries after it are still described), not oa_refused (its policy refuses it), oa_guess (it filters '
	  . 'on a masked column, which its policy refuses), oa_other (not granted) nor oa_mine (it takes a '
	  . 'parameter from a token, and a key has none)');
is($qg->get('/q/oa_guess?name=Jane', key => $key)->{status}, 403, 'as a call of oa_guess is refused');
is_deeply([ sort keys %{ $qg->get('/openapi.json', key => $other_key)->{json}{paths} } ], [ '/q/oa_codes', '/q/oa_other' ],
	'another key sees its own');

my %params = map { $_->{name} => $_ } grep { !$_->{'$ref'} } @{ $doc->{paths}{'/q/oa_people'}{get}{parameters} };
is_deeply($params{id}, { name => 'id', in => 'query', required => JSON::PP::true,
		schema => { type => 'integer', format => 'int32', description => 'the person', minimum => 1, maximum => 1000,
			examples => [1] } },
	'a parameter with its type and rules, and an example from them (its minimum)');
my %search = map { $_->{name} => $_ } grep { !$_->{'$ref'} } @{ $doc->{paths}{'/q/oa_search'}{get}{parameters} };
is($search{q}{schema}{pattern}, '^(?:[A-Za-z]+)$', 'a pattern ECMA-262 reads alike, anchored as the rule matches whole');
is_deeply($search{kind}{schema}{enum}, [qw(a b)], 'an enum');
is($search{lim}{schema}{default}, 10, 'a default');
is_deeply([ map { $search{$_}{schema}{examples} } qw(kind lim) ], [ ['a'], [10] ],
	'examples from the rules: the first allowed value, the default');
is_deeply($search{q}{schema}{examples}, ['Ab'], 'and the rule\'s own example');
ok(!$search{lim}{required}, 'with a default, not required');
my %odd = map { $_->{name} => $_ } grep { !$_->{'$ref'} } @{ $doc->{paths}{'/q/oa_odd'}{get}{parameters} };
ok(!exists $odd{q}{schema}{pattern}, 'a pattern ECMA-262 would read otherwise is no pattern');
is($odd{q}{schema}{'x-postgresql-pattern'}, '\m[[:alpha:]]+', 'but kept as PostgreSQL\'s');
my $now = time();
my $token = QuerygateTest::jwt_hs256({ sub => 'u1', policy => 'oa_pol', iss => 'https://issuer.test', tenant => 't1', exp => $now + 600, iat => $now },
	$secret);
my $by_token = $qg->get('/openapi.json', bearer => $token)->{json};
ok($by_token->{paths}{'/q/oa_mine'}, 'a bearer token of the policy may call oa_mine');
ok(!grep({ ($_->{name} // '') eq 'tenant' } @{ $by_token->{paths}{'/q/oa_mine'}{get}{parameters} }),
	'but its parameter from the token is not the caller\'s to send: not listed');

my $row = $doc->{components}{schemas}{'oa_people.row'}{properties};
is_deeply([ sort keys %$row ], [qw(born id meta name score ssn)], 'the answer\'s columns: the dropped one is not there');
is($row->{ssn}{pattern}, '^[0-9a-f]{64}$', 'a hashed column is 64 hex digits');
is_deeply($row->{name}{type}, [qw(string null)], 'a masked text column is text or null');
is($row->{born}{format}, 'date', 'a date');
ok(!exists $row->{meta}{type}, 'jsonb is any JSON value');
is_deeply($row->{score}{type}, [qw(number string null)], 'numeric is a number (or NaN\'s string)');
is_deeply($doc->{components}{schemas}{'oa_touch.row'}{required}, ['rows_affected'], 'a write answers rows_affected');
is_deeply($doc->{components}{schemas}{'oa_people.row'}{required}, [qw(id name ssn born meta score)],
	'every column served is in every row (required)');
is($doc->{components}{schemas}{'oa_people.row'}{additionalProperties}, JSON::PP::false, 'and nothing else');
ok($doc->{components}{securitySchemes}{apiKey} && $doc->{components}{securitySchemes}{bearer}, 'both security schemes');
ok($doc->{paths}{'/q/oa_people'}{get}{responses}{403}, 'and the error answers');
is($doc->{paths}{'/q/oa_people'}{get}{responses}{503}{'$ref'}, '#/components/responses/Unavailable',
	'a 503 as the answer of a server that cannot serve now');
ok($doc->{components}{responses}{Unavailable}{headers}{'Retry-After'}, 'which declares Retry-After');
my $live = $qg->get('/q/oa_people?id=1', key => $key)->{json}[0];
is_deeply([ sort keys %$live ], [ sort keys %$row ], 'the columns are what a call answers');

# --- the catalog
my $catalog = $qg->get('/catalog', key => $key)->{json};
is_deeply([ map { $_->{name} } @{ $catalog->{queries} } ], [qw(oa_odd oa_people oa_search oa_touch)], 'the catalog lists the same');
my ($people) = grep { $_->{name} eq 'oa_people' } @{ $catalog->{queries} };
is($people->{description}, 'one person by id', 'with descriptions');
is_deeply([ map { "$_->{name}:" . ($_->{mask} // '-') } @{ $people->{columns} } ],
	[qw(id:- name:mask ssn:hash born:- meta:- score:-)], 'and the columns with their masks');
is_deeply([ map { "$_->{name}:$_->{type}" } @{ $people->{columns} } ],
	[qw(id:integer name:string ssn:string born:string meta:json score:number)],
	'typed as served');
my ($codes) = grep { $_->{name} eq 'oa_codes' } @{ $qg->get('/catalog', key => $other_key)->{json}{queries} // [] };
is(join(' ', map { "$_->{name}:$_->{type}:$_->{postgres_type}:$_->{mask}" } @{ $codes->{columns} // [] }),
	'code:string:integer:hash', 'a hashed integer column is a string (64 hex digits), as served');
is_deeply($people->{formats}, [qw(json ndjson csv tsv)], 'and the formats');

# --- SQL of the caller's own: POST /sql and GET /schema, only for a policy granted it
ok(!$doc->{paths}{'/sql'} && !$doc->{paths}{'/schema'}, 'no /sql or /schema without ad-hoc SQL');
$qg->sql(q{SELECT querygate.grant_adhoc('oa_pol')});
my $adhoc = $qg->get('/openapi.json', key => $key);
my $sql_op = $adhoc->{json}{paths}{'/sql'}{post};
ok($sql_op && $adhoc->{json}{paths}{'/schema'}{get}, 'with the grant: POST /sql and GET /schema');
is_deeply($adhoc->{json}{components}{schemas}{'querygate.sql_body'}{required}, ['sql'], '/sql\'s body: the statement');
ok($sql_op->{responses}{403} && $adhoc->{json}{paths}{'/schema'}{get}{responses}{403}, 'both with the error answers');
is_deeply($adhoc->{json}{components}{schemas}{'querygate.schema'}{required}, [qw(search_path tables write_ops functions)],
	'/schema\'s answer described');
ok(!$qg->get('/openapi.json', key => $other_key)->{json}{paths}{'/sql'}, 'another policy\'s key: still none');

# --- a real linter, a generated client, and TypeScript
my $dir = PostgreSQL::Test::Utils::tempdir();
my ($out, $err) = ('', '');
for my $lint ([ 'openapi.json', $res ], [ 'adhoc.json', $adhoc ])
{
	open(my $lf, '>', "$dir/$lint->[0]") or die;
	print $lf $lint->[1]{content};
	close $lf;
	IPC::Run::run([ "$clients/redocly", 'lint', "$dir/$lint->[0]" ], '>', \$out, '2>', \$err);
	is($? >> 8, 0, "redocly lint of $lint->[0]: no error") or diag("$out\n$err");
}
IPC::Run::run([ "$clients/openapi-typescript", "$dir/openapi.json", '-o', "$dir/api.d.ts" ], '>', \$out, '2>', \$err);
is($? >> 8, 0, 'openapi-typescript generates a client') or diag($err);
my $client = <<'TS';
import type { paths, components } from "./api";
type Query = paths["/q/oa_people"]["get"]["parameters"]["query"];
const ask: Query = { id: 7 };
type Row = components["schemas"]["oa_people.row"];
const row: Row = { id: 1, name: "J***", ssn: null, born: "1990-01-02", meta: { a: 1 }, score: 1.5 };
type Touch = components["schemas"]["oa_touch.row"];
const touched: Touch = { rows_affected: 1 };
export { ask, row, touched };
TS
sub tsc
{
	my ($source) = @_;
	open(my $ts, '>', "$dir/client.ts") or die;
	print $ts $source;
	close $ts;
	my ($o, $e) = ('', '');
	IPC::Run::run([ "$clients/tsc", '--noEmit', '--strict', "$dir/client.ts" ], '>', \$o, '2>', \$e);
	return ($? >> 8, "$o$e");
}
my ($rc, $why) = tsc($client);
is($rc, 0, 'a TypeScript client type-checks against it') or diag($why);
($rc, $why) = tsc($client =~ s/\{ id: 7 \}/{ id: "seven" }/r);
isnt($rc, 0, 'and one sending a string for an integer does not');
like($why, qr/not assignable/, 'as TypeScript says');

done_testing();
