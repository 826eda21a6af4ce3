# POST /mcp (src/http/mcp.hpp): the Model Context Protocol over streamable HTTP, tools-only and
# stateless. The official TypeScript SDK's client lists and calls tools with a key; governance is
# that of /q/{name} (a masked column is masked, an ungranted query is neither listed nor callable,
# a write is not listed and refused while writes are off, listed as not read-only once they are
# on); the transport's rules (Origin, MCP-Protocol-Version, one message a request, notifications
# 202, GET 405); a refused key or token is 403, so that the MCP Inspector's CLI lists and calls
# with a key and, with a bad one, says so without looking for OAuth; and the official conformance
# suite's scenarios that apply to a tools-only server pass, with the rest listed and explained in
# test/clients/mcp-conformance-baseline.yml.
use strict;
use warnings;
use FindBin;
use IPC::Run;
use List::Util ();
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $clients = "$FindBin::Bin/../clients";
my $node = "$clients/node_modules/.bin/node";
my $qg = QuerygateTest->start(name => 'mcp');
$qg->sql(q{
	CREATE TABLE mcp_people (id int PRIMARY KEY, name text, ssn text, score int);
	INSERT INTO mcp_people VALUES (1, 'Jane', '123-45', 10), (2, 'Joe', '678-90', 20);
	SELECT querygate.save_query('mcp_person', 'SELECT id, name, ssn, score FROM mcp_people WHERE id = :id',
	  'one person by id', '{"id": {"type": "integer", "min": 1, "description": "the person"}}');
	SELECT querygate.save_query('mcp_touch', 'UPDATE mcp_people SET score = score + :by::int WHERE id = :id');
	SELECT querygate.save_query('mcp_secret', 'SELECT 42 AS answer');
});
$qg->role('mcp_role', select => ['mcp_people']);
$qg->sql('GRANT UPDATE ON mcp_people TO mcp_role');
my $key = $qg->access(policy => 'mcp_pol', run_as => 'mcp_role', queries => [qw(mcp_person mcp_touch)],
	setup => q{
		SELECT querygate.grant_writes('mcp_pol', '{update}');
		SELECT querygate.mask('mcp_pol', 'public.mcp_people.ssn', 'hash');
		SELECT querygate.mask('mcp_pol', 'public.mcp_people.name', 'mask');
	});
my $url = 'http://127.0.0.1:' . $qg->port . '/mcp';

# The SDK's client: connect, list, call (test/clients/mcp_client.mjs).
sub sdk
{
	my ($secret, @calls) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $node, "$clients/mcp_client.mjs", $url, $secret // '', JSON::PP->new->encode(\@calls) ],
		'>', \$out, '2>', \$err);
	my $res = eval { decode_json($out) };
	diag("mcp_client.mjs: exit " . ($? >> 8) . "\n$err") unless $res;
	return $res;
}

my $r = sdk($key, { name => 'mcp_person', arguments => { id => 1 } }, { name => 'mcp_person', arguments => { id => 0 } },
	{ name => 'mcp_secret', arguments => {} }, { name => 'mcp_touch', arguments => { id => 1, by => 1 } });
ok($r, 'the official SDK client connects');
is($r->{server}{name}, 'querygate', 'to querygate');
is($r->{protocolVersion}, '2025-11-25', 'on protocol revision 2025-11-25');
is_deeply([ map { $_->{name} } @{ $r->{tools} } ], ['mcp_person'],
	'a tool for each query the key may call: not mcp_secret (not granted), not mcp_touch (writes are off)');
my ($tool) = @{ $r->{tools} };
is($tool->{description}, 'one person by id', 'described as saved');
is_deeply($tool->{inputSchema}{properties}{id},
	{ type => 'integer', format => 'int32', minimum => 1, description => 'the person', examples => [1] },
	'its parameter with type and rules, and an example');
is_deeply($tool->{inputSchema}{required}, ['id'], 'required');
is($tool->{outputSchema}{properties}{rows}{items}{properties}{ssn}{pattern}, '^[0-9a-f]{64}$',
	'its output schema: the hashed column is 64 hex digits');
ok($tool->{annotations}{readOnlyHint}, 'annotated read-only');
# Portable: a list of types is said as anyOf (validators in strict mode warn on "type": [...]).
sub type_lists
{
	my ($s) = @_;
	return List::Util::sum(0, map { type_lists($_) } @$s) if ref $s eq 'ARRAY';
	return 0 unless ref $s eq 'HASH'; # a string, a number, a JSON boolean
	return (ref $s->{type} eq 'ARRAY' ? 1 : 0) + List::Util::sum(0, map { type_lists($_) } values %$s);
}
is(type_lists($tool->{outputSchema}) + type_lists($tool->{inputSchema}), 0, 'no list of types in its schemas');
is_deeply($tool->{outputSchema}{properties}{rows}{items}{properties}{score}{anyOf},
	[ { type => 'integer' }, { type => 'null' } ], 'a nullable column: anyOf its type and null');

my ($person, $bad, $secret, $touch) = @{ $r->{calls} };
ok(!$person->{isError}, 'tools/call answers') or diag(explain($person));
my $row = $person->{structuredContent}{rows}[0];
is($row->{id}, 1, 'the row as structuredContent');
is($row->{name}, 'J***', 'a masked column masked');
like($row->{ssn}, qr/^[0-9a-f]{64}$/, 'a hashed column hashed');
is_deeply(decode_json($person->{content}[0]{text}), $person->{structuredContent}{rows}, 'and the same rows as a text block');
ok(!$person->{structuredContent}{has_more}, 'with has_more');
ok($bad->{isError}, 'a value its rule refuses: an isError result');
is(decode_json($bad->{content}[0]{text})->{code}, 'param_invalid', 'with the stable code');
like($secret->{thrown} // '', qr/-32602.*unknown tool: mcp_secret/, 'an ungranted query cannot be called: unknown tool');
ok($touch->{isError}, 'a write while writes are off: refused');
is(decode_json($touch->{content}[0]{text})->{code}, 'read_only', 'as read_only');
is($qg->sql('SELECT score FROM mcp_people WHERE id = 1'), '10', 'and nothing was written');

my $anonymous = sdk(undef);
is_deeply($anonymous->{tools}, [], 'without a key: initialize answers, and no tool is listed');

# --- writes on: the write is a tool, not read-only, and answers rows_affected
$qg->sql("ALTER SYSTEM SET querygate.allow_writes = on; SELECT pg_reload_conf();");
ok(QuerygateTest::poll_until(sub {
	my $t = sdk($key);
	$t && grep { $_->{name} eq 'mcp_touch' } @{ $t->{tools} } }), 'with writes on, the write is listed');
$r = sdk($key, { name => 'mcp_touch', arguments => { id => 1, by => 5 } });
my ($write_tool) = grep { $_->{name} eq 'mcp_touch' } @{ $r->{tools} };
ok(!$write_tool->{annotations}{readOnlyHint} && $write_tool->{annotations}{destructiveHint},
	'annotated not read-only');
is_deeply($r->{calls}[0]{structuredContent}, { rows_affected => 1 }, 'tools/call writes: rows_affected');
is($qg->sql('SELECT score FROM mcp_people WHERE id = 1'), '15', 'written');
ok(!exists $write_tool->{inputSchema}{properties}{page}, 'a write without RETURNING takes no page');

# --- paging: page and page_size among a tool's arguments, as /q/{name} takes them
$qg->sql(q{INSERT INTO mcp_people SELECT g, 'p' || g, 'x', g FROM generate_series(3, 7) g;
           SELECT querygate.save_query('mcp_ids', 'SELECT id FROM mcp_people ORDER BY id');
           SELECT querygate.grant_query('mcp_pol', 'mcp_ids')});
$r = sdk($key, { name => 'mcp_ids', arguments => { page_size => 3 } },
	{ name => 'mcp_ids', arguments => { page => 3, page_size => 3 } },
	{ name => 'mcp_ids', arguments => {} },
	{ name => 'mcp_ids', arguments => { page => 0 } },
	{ name => 'mcp_ids', arguments => { page_size => 1001 } });
my ($ids_tool) = grep { $_->{name} eq 'mcp_ids' } @{ $r->{tools} };
is_deeply({ map { $_ => $ids_tool->{inputSchema}{properties}{$_}{type} } qw(page page_size) },
	{ page => 'integer', page_size => 'integer' }, 'a tool that answers rows takes page and page_size');
is_deeply($ids_tool->{inputSchema}{required} // [], [], 'neither required');
my ($first, $third, $whole, $zero, $over) = @{ $r->{calls} };
is_deeply([ map { $_->{id} } @{ $first->{structuredContent}{rows} } ], [ 1, 2, 3 ], 'page_size 3: the first three rows');
ok($first->{structuredContent}{has_more}, 'and has_more');
is_deeply([ map { $_->{id} } @{ $third->{structuredContent}{rows} } ], [7], 'page 3 of 3 a page: the seventh row');
ok(!$third->{structuredContent}{has_more}, 'the last page: has_more false');
is(scalar @{ $whole->{structuredContent}{rows} }, 7, 'neither given: the first page of the default size');
ok($zero->{isError}, 'page 0: an isError result');
is(decode_json($zero->{content}[0]{text})->{code}, 'invalid_paging', 'invalid_paging');
like(decode_json($over->{content}[0]{text})->{error}, qr/page_size must be a whole number from 1 to 1000/,
	'a page_size over querygate.max_page_size says the range');

# --- the transport, by hand
my $init = { jsonrpc => '2.0', id => 1, method => 'initialize',
	params => { protocolVersion => '1999-01-01', capabilities => {}, clientInfo => { name => 't', version => '1' } } };
my $res = $qg->post('/mcp', $init);
is($res->{status}, 200, 'initialize: 200');
is($res->{json}{result}{protocolVersion}, '2025-11-25', 'a version not spoken is answered with the newest');
is($res->{json}{id}, 1, 'the id echoed');
$res = $qg->post('/mcp', { jsonrpc => '2.0', id => 'p', method => 'ping' });
is_deeply($res->{json}, { jsonrpc => '2.0', id => 'p', result => {} }, 'ping: {}');
$res = $qg->post('/mcp', { jsonrpc => '2.0', method => 'notifications/initialized' });
is($res->{status}, 202, 'a notification: 202');
is($res->{content}, '', 'with no body');
$res = $qg->post('/mcp', { jsonrpc => '2.0', id => 2, method => 'resources/list' });
is($res->{json}{error}{code}, -32601, 'a method not served: method not found');
$res = $qg->post('/mcp', [ { jsonrpc => '2.0', id => 3, method => 'ping' } ]);
is("$res->{status} $res->{json}{error}{code}", '400 -32600', 'a batch: 400, invalid request');
$res = $qg->request('POST', '/mcp', content => '{"jsonrpc": "2.0", "id": 4, "method": ');
is("$res->{status} $res->{json}{error}{code}", '400 -32700', 'not JSON: 400, parse error');
$res = $qg->post('/mcp', { jsonrpc => '2.0', id => 5, method => 'ping' },
	headers => { 'MCP-Protocol-Version' => '2030-01-01' });
$qg->expect_error($res, 400, 'unsupported_protocol_version', 'a protocol version not spoken');
$res = $qg->post('/mcp', { jsonrpc => '2.0', id => 6, method => 'ping' },
	headers => { 'MCP-Protocol-Version' => '2025-06-18', Origin => 'http://localhost:3000' });
is($res->{status}, 200, 'a spoken version from a loopback origin: 200');
$qg->expect_error($qg->post('/mcp', { jsonrpc => '2.0', id => 7, method => 'ping' },
	headers => { Origin => 'http://evil.example.com' }), 403, 'origin_not_allowed', 'another origin');
$qg->expect_error($qg->get('/mcp'), 405, 'method_not_allowed', 'GET: no stream of the server\'s own');
$qg->expect_error($qg->post('/mcp', { jsonrpc => '2.0', id => 8, method => 'tools/call',
	params => { name => 'mcp_person', arguments => { id => 1 } } }), 401, 'unauthorized', 'tools/call without a key');
# A key or token that is refused: 403, so that no MCP client is sent into OAuth discovery (which
# the SDK starts on any 401), with no challenge that would invite it.
$res = $qg->post('/mcp', { jsonrpc => '2.0', id => 9, method => 'tools/list' }, key => 'qg_not_a_key');
$qg->expect_error($res, 403, 'unauthorized', 'tools/list with a key that is not one');
ok(!defined $res->{headers}{'www-authenticate'}, 'with no WWW-Authenticate');
$qg->expect_error($qg->post('/mcp', { jsonrpc => '2.0', id => 9, method => 'tools/call',
	params => { name => 'mcp_person', arguments => { id => 1 } } }, key => 'qg_not_a_key'), 403, 'unauthorized',
	'tools/call with a key that is not one');
$qg->expect_error($qg->post('/mcp', { jsonrpc => '2.0', id => 9, method => 'tools/list' }, bearer => 'a.b.c'),
	403, 'invalid_token', 'tools/list with a bearer token that is not one');
$res = $qg->post('/mcp', { jsonrpc => '2.0', id => 10, method => 'tools/call', params => { arguments => {} } },
	key => $key);
is($res->{json}{error}{code}, -32602, 'tools/call without a name: invalid params');

# --- the MCP Inspector's CLI (2.12.0), with no terminal: lists and calls with a key; with a key
# that is not one, it says so and exits, asking for nothing and looking for no OAuth server.
sub inspector
{
	my ($secret, @args) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PATH} = "$clients/node_modules/node/bin:$ENV{PATH}"; # Node 22 for what it starts
	my $ran = eval {
		IPC::Run::run([ $node, "$clients/node_modules/.bin/mcp-inspector", '--cli', $url, '--transport', 'http',
				'--header', "X-API-Key: $secret", @args ],
			'<', \'', '>', \$out, '2>', \$err, IPC::Run::timeout(QuerygateTest::timeouts(60)));
		1;
	};
	return ('timed out', $out, $err . ($@ // '')) unless $ran;
	return ($? >> 8, $out, $err);
}
$qg->set_and_reload('querygate.log_requests', 'all');
my $log_from = -s $qg->node->logfile;
my ($rc, $listed, $why) = inspector($key, '--method', 'tools/list');
is($rc, 0, 'the Inspector CLI lists the tools with a key') or diag($why);
my $direct = $qg->post('/mcp', { jsonrpc => '2.0', id => 1, method => 'tools/list' }, key => $key);
is_deeply([ sort map { $_->{name} } @{ (eval { decode_json($listed) } // {})->{tools} // [] } ],
	[ sort map { $_->{name} } @{ $direct->{json}{result}{tools} // [] } ], 'the tools the key may call');
my $called;
($rc, $called, $why) = inspector($key, '--method', 'tools/call', '--tool-name', 'mcp_person', '--tool-arg', 'id=2');
is($rc, 0, 'and calls one') or diag($why);
is((eval { decode_json($called) } // {})->{structuredContent}{rows}[0]{id}, 2, 'with its answer');
my ($bad_out, $bad_err);
($rc, $bad_out, $bad_err) = inspector('qg_not_a_key', '--method', 'tools/list');
is($rc, 3, 'with a key that is not one, the Inspector CLI fails at once (3: auth_required)');
like("$bad_out$bad_err", qr/a valid API key is required/, 'saying what the server said');
unlike("$bad_out$bad_err", qr/OAuth|TTY/i, 'not asking for OAuth or a terminal');
my $seen = slurp_file($qg->node->logfile, $log_from);
unlike($seen, qr{path=\S*(\.well-known|/register|/authorize)}, 'nor looking for an OAuth server');
$qg->set_and_reload('querygate.log_requests', 'off');

# --- the official conformance suite
my ($out, $err) = ('', '');
IPC::Run::run([ $node, "$clients/node_modules/.bin/conformance", 'server', '--url', $url,
	'--expected-failures', "$clients/mcp-conformance-baseline.yml" ], '>', \$out, '2>', \$err);
is($? >> 8, 0, 'the conformance suite: what applies passes, and only the baseline\'s scenarios fail')
  or diag("$out\n$err");
utf8::decode($out);
$out =~ s/\e\[[0-9;]*m//g;
for my $scenario (qw(server-initialize ping tools-list dns-rebinding-protection))
{
	like($out, qr/\x{2713} \Q$scenario\E: [1-9]\d* passed, 0 failed/, "conformance: $scenario passes");
}

done_testing();
