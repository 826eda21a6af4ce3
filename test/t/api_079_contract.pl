# The OpenAPI document is a contract the server keeps: Stoplight Prism (test/clients, pinned), as a
# validating proxy in front of the server with the document the caller's key is given, checks
# every answer of every format and status a caller meets (200 in JSON, NDJSON, CSV and TSV, a
# page, GET and POST, a write, a write's rows, 304, 400, 401, 403, 404, 405, 406, 429) and finds no
# mismatch: no response violation, and no violation at all for a request the document allows.
# The key's policy is granted SQL of its own (grant_adhoc), so the document also has POST /sql and
# GET /schema, checked the same way: rows in every format, a page, an export, writes, masked
# columns, one table's schema, and each refusal a caller writing SQL meets.
use strict;
use warnings;
use FindBin;
use HTTP::Tiny;
use IO::Socket::INET;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $clients = "$FindBin::Bin/../clients";
my $qg = QuerygateTest->start(name => 'contract', conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE TABLE ct_people (id int PRIMARY KEY, name text NOT NULL, ssn text, score numeric, born date,
	                        meta jsonb, secret text, n int NOT NULL DEFAULT 0);
	INSERT INTO ct_people SELECT g, 'name ' || g, 'ssn-' || g, g * 1.5, date '2000-01-01' + g,
	                             jsonb_build_object('g', g), 's', 0
	  FROM generate_series(1, 300) g;
	INSERT INTO ct_people (id, name) VALUES (301, 'nulls');
	SELECT querygate.save_query('ct_person', 'SELECT id, name, ssn, score, born, meta, secret FROM ct_people WHERE id = :id',
	  'one person', '{"id": {"type": "integer", "min": 1, "max": 1000}}');
	SELECT querygate.save_query('ct_range', 'SELECT id, name FROM ct_people WHERE id <= :upto ORDER BY id', NULL,
	  '{"upto": {"type": "integer", "default": 5}}');
	SELECT querygate.save_query('ct_by_ssn', 'SELECT id FROM ct_people WHERE ssn = :ssn');
	SELECT querygate.save_query('ct_bump', 'UPDATE ct_people SET n = n + 1 WHERE id = :id');
	SELECT querygate.save_query('ct_bump_ret', 'UPDATE ct_people SET n = n + 1 WHERE id = :id RETURNING id, n');
});
$qg->role('ct_role', select => ['ct_people'], grant => ['UPDATE ON ct_people']);
my @granted = (queries => [qw(ct_person ct_range ct_by_ssn ct_bump ct_bump_ret)]);
my $key = $qg->access(policy => 'ct_pol', run_as => 'ct_role', @granted,
	setup => q{
		SELECT querygate.grant_writes('ct_pol', '{update}');
		SELECT querygate.mask('ct_pol', 'ct_people.ssn', 'hash', force => true);
		SELECT querygate.mask('ct_pol', 'ct_people.name', 'mask');
		SELECT querygate.mask('ct_pol', 'ct_people.secret', 'null');
		SELECT querygate.allow_tables('ct_pol', ARRAY['ct_people']::regclass[]);
		SELECT querygate.grant_adhoc('ct_pol', write_ops => '{update}');
	});
my $limited = $qg->access(policy => 'ct_pol', key_args => 'rate_per_second => 0.001, burst => 1');
# A policy whose callers may not send SQL, its key calling POST /sql as the document describes it.
my $no_sql = $qg->access(policy => 'ct_no_sql', run_as => 'ct_role', @granted);

# The document as the key sees it, and Prism in front of the server.
my $dir = PostgreSQL::Test::Utils::tempdir();
my $doc = $qg->get('/openapi.json', key => $key);
is($doc->{status}, 200, 'the OpenAPI document');
open(my $fh, '>', "$dir/openapi.json") or die;
print $fh $doc->{content};
close $fh;
my $port = PostgreSQL::Test::Cluster::get_free_port();
my ($prism_out, $prism_err) = ('', '');
my $prism;
{
	local $ENV{PATH} = "$clients/node_modules/node/bin:$ENV{PATH}";
	$prism = IPC::Run::start([ "$clients/node_modules/.bin/node", "$clients/node_modules/.bin/prism", 'proxy',
			"$dir/openapi.json", 'http://127.0.0.1:' . $qg->port, '--port', $port, '--host', '127.0.0.1' ],
		'<', \undef, '>', \$prism_out, '2>', \$prism_err);
}
ok(QuerygateTest::poll_until(sub {
			IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp') ? 1 : 0 },
		QuerygateTest::timeouts(60)),
	'Prism proxies the server')
  or diag("$prism_out\n$prism_err");
my $client = HTTP::Tiny->new(keep_alive => 0, timeout => QuerygateTest::timeouts(30));

# A request through Prism: its status, and the violations Prism found (its sl-violations header).
sub through
{
	my ($method, $path, %o) = @_;
	my %headers = %{ $o{headers} // {} };
	$headers{'X-API-Key'} = $o{key} if defined $o{key};
	my %req = (headers => \%headers);
	if (defined $o{json})
	{
		$req{content} = encode_json($o{json});
		$headers{'Content-Type'} = 'application/json';
	}
	my $res = $client->request($method, "http://127.0.0.1:$port$path", \%req);
	my $v = $res->{headers}{'sl-violations'};
	return ($res, defined $v ? (eval { decode_json($v) } // [ { location => ['unreadable'], message => $v } ]) : []);
}

# Each case: what is asked, the status the server answers, and whether the request is one the
# document allows (then no violation at all); a request the document does not allow may have its
# request's violations, but its answer none.
my $tag = $qg->get('/q/ct_person?id=1', key => $key)->{headers}{etag};
my @cases = (
	[ 'GET, JSON', 'GET', '/q/ct_person?id=1', 200, 1, key => $key ],
	[ 'GET, a row of nulls', 'GET', '/q/ct_person?id=301', 200, 1, key => $key ],
	[ 'GET, NDJSON', 'GET', '/q/ct_person?id=1&format=ndjson', 200, 1, key => $key ],
	[ 'GET, CSV', 'GET', '/q/ct_person?id=1&format=csv', 200, 1, key => $key ],
	[ 'GET, TSV', 'GET', '/q/ct_person?id=1&format=tsv', 200, 1, key => $key ],
	[ 'GET, CSV by Accept', 'GET', '/q/ct_person?id=2', 200, 1, key => $key, headers => { Accept => 'text/csv' } ],
	[ 'GET, a page', 'GET', '/q/ct_range?upto=50&page=2&page_size=10', 200, 1, key => $key ],
	[ 'GET, a default', 'GET', '/q/ct_range', 200, 1, key => $key ],
	[ 'GET, gzip', 'GET', '/q/ct_range?upto=200&page_size=200', 200, 1, key => $key,
		headers => { 'Accept-Encoding' => 'gzip' } ],
	[ 'GET, an export', 'GET', '/q/ct_range?upto=300&stream=true&format=csv', 200, 1, key => $key ],
	[ 'POST, JSON body', 'POST', '/q/ct_person', 200, 1, key => $key, json => { params => { id => 3 } } ],
	[ 'POST, NDJSON', 'POST', '/q/ct_person', 200, 1, key => $key, json => { params => { id => 3 }, format => 'ndjson' } ],
	[ 'POST, a write', 'POST', '/q/ct_bump', 200, 1, key => $key, json => { params => { id => 4 } } ],
	[ 'POST, a write with the parameters in the query string', 'POST', '/q/ct_bump?id=4', 200, 1, key => $key ],
	[ 'POST, a write\'s rows', 'POST', '/q/ct_bump_ret', 200, 1, key => $key, json => { params => { id => 5 } } ],
	[ '304', 'GET', '/q/ct_person?id=1', 304, 1, key => $key, headers => { 'If-None-Match' => $tag } ],
	[ '400, a bad parameter', 'GET', '/q/ct_person?id=x', 400, 0, key => $key ],
	[ '400, a missing parameter', 'GET', '/q/ct_person', 400, 0, key => $key ],
	[ '401, no key', 'GET', '/q/ct_person?id=1', 401, 0 ],
	[ '401, a wrong key', 'GET', '/q/ct_person?id=1', 401, 1, key => 'qg_' . ('W' x 43) ],
	# Not in the document (its policy refuses every call): the request is not one it allows.
	[ '403, refused by the policy (a filter on a masked column)', 'GET', '/q/ct_by_ssn?ssn=x', 403, 0, key => $key ],
	[ '404, a query not granted', 'GET', '/q/ct_nothing', 404, 0, key => $key ],
	[ '405, GET of a write', 'GET', '/q/ct_bump?id=1', 405, 0, key => $key ],
	[ '406, a format not served', 'GET', '/q/ct_person?id=1', 406, 1, key => $key,
		headers => { Accept => 'application/xml' } ],
	[ '200 of a limited key', 'GET', '/q/ct_person?id=1', 200, 1, key => $limited ],
	[ '429', 'GET', '/q/ct_person?id=1', 429, 1, key => $limited ],
	[ 'SQL: 429', 'POST', '/sql', 429, 1, key => $limited, json => { sql => 'SELECT 1 AS one' } ],
	# SQL of the caller's own, and its schema.
	[ 'SQL: rows', 'POST', '/sql', 200, 1, key => $key,
		json => { sql => 'SELECT id, name, ssn, score, born, meta, secret FROM ct_people WHERE id <= :upto ORDER BY id',
			params => { upto => 3 } } ],
	[ 'SQL: a row of nulls', 'POST', '/sql', 200, 1, key => $key,
		json => { sql => 'SELECT id, ssn, score, born, meta FROM ct_people WHERE id = :id', params => { id => 301 } } ],
	[ 'SQL: no rows', 'POST', '/sql', 200, 1, key => $key, json => { sql => 'SELECT id FROM ct_people WHERE id = 0' } ],
	[ 'SQL: NDJSON', 'POST', '/sql', 200, 1, key => $key, json => { sql => 'SELECT id, name FROM ct_people WHERE id <= 3', format => 'ndjson' } ],
	[ 'SQL: CSV', 'POST', '/sql', 200, 1, key => $key, json => { sql => 'SELECT id, name FROM ct_people WHERE id <= 3', format => 'csv' } ],
	[ 'SQL: TSV by Accept', 'POST', '/sql', 200, 1, key => $key, json => { sql => 'SELECT id, name FROM ct_people WHERE id <= 3' },
		headers => { Accept => 'text/tab-separated-values' } ],
	[ 'SQL: a page', 'POST', '/sql', 200, 1, key => $key,
		json => { sql => 'SELECT id FROM ct_people ORDER BY id', page => 2, page_size => 10 } ],
	[ 'SQL: an export', 'POST', '/sql', 200, 1, key => $key,
		json => { sql => 'SELECT id, name FROM ct_people ORDER BY id', stream => JSON::PP::true, format => 'csv' } ],
	[ 'SQL: a write', 'POST', '/sql', 200, 1, key => $key,
		json => { sql => 'UPDATE ct_people SET n = n + 1 WHERE id = :id', params => { id => 6 } } ],
	[ 'SQL: a write\'s rows', 'POST', '/sql', 200, 1, key => $key,
		json => { sql => 'UPDATE ct_people SET n = n + 1 WHERE id = :id RETURNING id, n', params => { id => 6 } } ],
	[ 'SQL: 400, a statement PostgreSQL cannot parse', 'POST', '/sql', 400, 1, key => $key, json => { sql => 'SELEC 1' } ],
	[ 'SQL: 400, a parameter not given', 'POST', '/sql', 400, 1, key => $key,
		json => { sql => 'SELECT id FROM ct_people WHERE id = :id' } ],
	[ 'SQL: 400, no statement', 'POST', '/sql', 400, 0, key => $key, json => { params => {} } ],
	[ 'SQL: 401, no key', 'POST', '/sql', 401, 0, json => { sql => 'SELECT 1 AS one' } ],
	[ 'SQL: 403, a policy not granted SQL', 'POST', '/sql', 403, 1, key => $no_sql, json => { sql => 'SELECT 1 AS one' } ],
	[ 'SQL: 403, a name not allowed', 'POST', '/sql', 403, 1, key => $key, json => { sql => 'SELECT relname FROM pg_class' } ],
	[ 'SQL: 403, a function not allowed', 'POST', '/sql', 403, 1, key => $key, json => { sql => 'SELECT version() AS v' } ],
	[ 'SQL: 403, a filter on a masked column', 'POST', '/sql', 403, 1, key => $key,
		json => { sql => q{SELECT id FROM ct_people WHERE ssn = 'ssn-1'} } ],
	[ 'SQL: 403, a write not granted to SQL', 'POST', '/sql', 403, 1, key => $key,
		json => { sql => 'DELETE FROM ct_people WHERE id = 0' } ],
	[ 'SQL: 405, GET', 'GET', '/sql', 405, 0, key => $key ],
	[ 'SQL: 406, a format not served', 'POST', '/sql', 406, 1, key => $key, json => { sql => 'SELECT 1 AS one' },
		headers => { Accept => 'application/xml' } ],
	[ 'schema', 'GET', '/schema', 200, 1, key => $key ],
	[ 'schema: one table', 'GET', '/schema?table=ct_people', 200, 1, key => $key ],
	[ 'schema: 403, a table not on the list', 'GET', '/schema?table=pg_class', 403, 1, key => $key ],
	[ 'schema: 403, a policy not granted SQL', 'GET', '/schema', 403, 1, key => $no_sql ],
	[ 'schema: 401, no key', 'GET', '/schema', 401, 0 ],
	[ 'schema: 405, POST', 'POST', '/schema', 405, 0, key => $key ],
);
for my $c (@cases)
{
	my ($name, $method, $path, $status, $allowed, %o) = @$c;
	my ($res, $violations) = through($method, $path, %o);
	is($res->{status}, $status, "$name: $status through Prism") or diag(QuerygateTest::describe($res));
	my @answer = grep { ($_->{location}[0] // '') ne 'request' } @$violations;
	is(encode_json(\@answer), '[]', "$name: the answer keeps the document");
	is(encode_json($violations), '[]', "$name: and the request is one it allows") if $allowed;
}

$prism->kill_kill;
done_testing();
