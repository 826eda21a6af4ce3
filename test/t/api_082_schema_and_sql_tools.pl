# GET /schema and MCP's SQL tools (src/api/schema_endpoint.hpp, src/call/schema_describer.hpp,
# src/http/sql_tools.hpp): for a caller whose policy takes SQL of its own (grant_adhoc), what that
# SQL may use. /schema is refused without a key (401) and for a policy without the grant (403
# sql_not_allowed); it lists the allow-list's tables only, each as the policy's role reads it (a
# column it may not SELECT left out, a column masked with drop left out, every other with its
# mask, by its table's name, a partition's parent or a view's lineage, and whether it may be
# filtered on), with DDL that shows no default, check, index or comment and a primary key only
# when all its columns are shown; ?table= narrows it, and refuses a table not listed and one not
# there with the same answer; a change of the allow-list is seen by the next request. MCP's
# tools/list adds execute_sql, list_tables and describe_table with the grant only, a saved query
# keeps a name it has, execute_sql answers rows and a refusal as the tool's error, and the
# official SDK client calls all three.
use strict;
use warnings;
use FindBin;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $clients = "$FindBin::Bin/../clients";
my $node = "$clients/node_modules/.bin/node";
my $qg = QuerygateTest->start(name => 'schema_tools');
$qg->sql(q{
	CREATE ROLE st_role NOLOGIN;
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int NOT NULL DEFAULT 1 CHECK (bid > 0), owner text,
	                       email varchar(40), secret text, created timestamptz DEFAULT now());
	CREATE INDEX accounts_bid ON accounts (bid);
	COMMENT ON TABLE accounts IS 'every account';
	CREATE TABLE branches (bid int, bname text, PRIMARY KEY (bid, bname));
	CREATE TABLE secrets (id int PRIMARY KEY, secret text);
	CREATE TABLE events (id int, at date NOT NULL, note text) PARTITION BY RANGE (at);
	CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
	CREATE VIEW rich AS SELECT aid, owner FROM accounts WHERE bid > 1;
	CREATE SEQUENCE counter;
	INSERT INTO accounts (aid, bid, owner, email, secret) SELECT g, 1 + g % 2, 'owner-' || g, 'o' || g || '@x.org', 's'
	  FROM generate_series(1, 5) g;
	INSERT INTO secrets VALUES (1, 'x');
	GRANT SELECT ON accounts, secrets, events_2024, rich TO st_role;
	GRANT SELECT (bid) ON branches TO st_role;
	SELECT querygate.save_query('list_tables', 'SELECT 42 AS answer', 'the saved one');
});
my $plain = $qg->access(policy => 'st_plain', run_as => 'st_role');
my $key = $qg->access(policy => 'st_pol', run_as => 'st_role',
	setup => q{
		SELECT querygate.allow_tables('st_pol', '{accounts,branches,events_2024,rich,counter}');
		SELECT querygate.grant_adhoc('st_pol');
		SELECT querygate.mask('st_pol', 'accounts.owner', 'hash');
		SELECT querygate.mask('st_pol', 'accounts.secret', 'drop');
		SELECT querygate.mask('st_pol', 'events.note', 'mask');
	});
my $clash = $qg->access(policy => 'st_clash', run_as => 'st_role', queries => ['list_tables'],
	setup => q{
		SELECT querygate.allow_tables('st_clash', '{accounts}');
		SELECT querygate.grant_adhoc('st_clash');
	});

# --- who may
$qg->expect_error($qg->get('/schema'), 401, 'unauthorized', 'GET /schema without a key');
$qg->expect_error($qg->get('/schema', key => $plain), 403, 'sql_not_allowed', 'a policy without SQL of its own');
$qg->expect_error($qg->post('/schema', {}, key => $key), 405, 'method_not_allowed', 'POST /schema');

# --- what it may use
my $res = $qg->get('/schema', key => $key);
is($res->{status}, 200, 'GET /schema: 200') or diag(QuerygateTest::describe($res));
my $schema = $res->{json};
is_deeply([ map { "$_->{schema}.$_->{name}:$_->{kind}" } @{ $schema->{tables} } ],
	[qw(public.accounts:table public.branches:table public.events_2024:table public.rich:view)],
	'the allow-list\'s tables, by name (not secrets, not listed; not the sequence counter)');
like($schema->{search_path}, qr/^pg_catalog, .*public/, 'where names resolve');
is_deeply($schema->{write_ops}, [], 'no writes granted');
like($schema->{functions}, qr/immutable.*current_setting/s, 'which functions');
my %table = map { $_->{name} => $_ } @{ $schema->{tables} };
sub columns
{
	my ($t) = @_;
	return [ map { join(':', $_->{name}, $_->{type}, $_->{nullable} ? 'null' : 'not null', $_->{mask} // '-',
				$_->{filterable} ? 'filter' : 'no filter') } @{ $t->{columns} } ];
}
is_deeply(columns($table{accounts}),
	[ 'aid:integer:not null:-:filter', 'bid:integer:not null:-:filter', 'owner:text:null:hash:no filter',
		'email:character varying(40):null:-:filter', 'created:timestamp with time zone:null:-:filter' ],
	'columns with types, NOT NULL, masks and filterable; the dropped one left out');
is($table{accounts}{ddl},
	"CREATE TABLE public.accounts (\n    aid integer NOT NULL,\n    bid integer NOT NULL,\n    owner text,\n"
	  . "    email character varying(40),\n    created timestamp with time zone,\n    PRIMARY KEY (aid)\n);",
	'its DDL: no default, check, index, comment or dropped column');
is_deeply(columns($table{branches}), ['bid:integer:not null:-:filter'], 'a column the role may not SELECT left out');
is($table{branches}{ddl}, "CREATE TABLE public.branches (\n    bid integer NOT NULL\n);",
	'and a primary key with a column not shown is not shown');
is_deeply(columns($table{events_2024}),
	[ 'id:integer:null:-:filter', 'at:date:not null:-:filter', 'note:text:null:mask:no filter' ],
	'a partition: its parent\'s mask applies');
is_deeply(columns($table{rich}), [ 'aid:integer:null:-:filter', 'owner:text:null:hash:no filter' ],
	'a view: the masks of what its columns come from');
is($table{rich}{ddl}, "CREATE VIEW public.rich (\n    aid integer,\n    owner text\n);", 'its DDL: no definition');
my $head = $qg->request('HEAD', '/schema', key => $key);
is("$head->{status} " . length($head->{content} // ''), '200 0', 'HEAD /schema: 200, no body');

# --- as the calls have it
my $sql = $qg->post('/sql', { sql => q{SELECT aid FROM accounts WHERE owner = 'owner-1'} }, key => $key);
$qg->expect_error($sql, 403, 'mask_predicate', 'a filter on a column said not filterable is refused');
$sql = $qg->post('/sql', { sql => q{SELECT aid FROM rich WHERE owner = 'owner-1'} }, key => $key);
$qg->expect_error($sql, 403, 'mask_predicate', 'and so through the view');

# --- one table
$res = $qg->get('/schema?table=accounts', key => $key);
is_deeply([ map { $_->{name} } @{ $res->{json}{tables} // [] } ], ['accounts'], '?table=accounts: that one');
is($res->{json}{tables}[0]{ddl}, $table{accounts}{ddl}, 'with its DDL');
$res = $qg->get('/schema?table=PUBLIC.Accounts', key => $key);
is_deeply([ map { $_->{name} } @{ $res->{json}{tables} // [] } ], ['accounts'], 'a qualified name, folded as SQL folds it');
my $listed = $qg->get('/schema?table=secrets', key => $key);
$qg->expect_error($listed, 403, 'name_not_allowed', 'a table not on the allow-list');
my $missing = $qg->get('/schema?table=nosuchx', key => $key);
$qg->expect_error($missing, 403, 'name_not_allowed', 'a table not there');
is(QuerygateTest::body_without_request_id($listed), QuerygateTest::body_without_request_id($missing),
	'the same answer for both');
$qg->expect_error($qg->get('/schema?table=%22Accounts%22', key => $key), 403, 'name_not_allowed',
	'a quoted name is not folded');
$qg->expect_error($qg->get('/schema?table=counter', key => $key), 403, 'name_not_allowed',
	'a listed sequence is no table');
$qg->expect_error($qg->get('/schema?table=pg_class', key => $key), 403, 'name_not_allowed', 'a catalog');

# --- a change of the allow-list, and of the masks, seen by the next request
$qg->sql(q{SELECT querygate.allow_tables('st_pol', '{accounts,branches,events_2024,rich,secrets}');
           SELECT querygate.set_policy('st_pol', mask_predicates => 'allow')});
$res = $qg->get('/schema?table=secrets', key => $key);
is_deeply([ map { $_->{name} } @{ $res->{json}{tables} // [] } ], ['secrets'], 'a table listed since');
$res = $qg->get('/schema?table=accounts', key => $key);
ok($res->{json}{tables}[0]{columns}[2]{filterable}, 'a masked column filterable once mask predicates are allowed');

# --- MCP: the tools, with and without the grant
sub rpc
{
	my ($k, $method, $params) = @_;
	return $qg->post('/mcp', { jsonrpc => '2.0', id => 1, method => $method, ($params ? (params => $params) : ()) },
		key => $k);
}
sub tool_names { return [ map { $_->{name} } @{ $_[0]{json}{result}{tools} // [] } ]; }
is_deeply(tool_names(rpc($key, 'tools/list')), [qw(execute_sql list_tables describe_table)],
	'tools/list with the grant: the SQL tools');
is_deeply(tool_names(rpc($plain, 'tools/list')), [], 'without it: none');
is_deeply(tool_names(rpc($clash, 'tools/list')), [qw(list_tables execute_sql describe_table)],
	'a saved query named list_tables keeps its name: that tool is the query');
my ($saved) = @{ rpc($clash, 'tools/list')->{json}{result}{tools} };
is($saved->{description}, 'the saved one', 'described as saved');
$res = rpc($clash, 'tools/call', { name => 'list_tables', arguments => {} });
is_deeply($res->{json}{result}{structuredContent}{rows}, [ { answer => 42 } ], 'and called as the query');
$res = rpc($plain, 'tools/call', { name => 'execute_sql', arguments => { sql => 'SELECT 1 AS one' } });
is($res->{json}{error}{code}, -32602, 'execute_sql without the grant: an unknown tool');

$res = rpc($key, 'tools/call',
	{ name => 'execute_sql', arguments => { sql => 'SELECT aid, owner FROM accounts WHERE aid = :aid', params => { aid => 2 } } });
my $result = $res->{json}{result};
ok(!$result->{isError}, 'execute_sql answers') or diag(explain($res->{json}));
is($result->{structuredContent}{rows}[0]{aid}, 2, 'the rows as structuredContent');
like($result->{structuredContent}{rows}[0]{owner}, qr/^[0-9a-f]{64}$/, 'masked as the policy masks');
ok(!$result->{structuredContent}{has_more}, 'with has_more');
my $rid = $res->{headers}{'x-request-id'};
my $recorded = '';
QuerygateTest::poll_until(sub {
	$recorded = $qg->sql(q{SELECT kind || '|' || coalesce(query, '-') || '|' || (sql LIKE 'sha256:%') FROM querygate.history WHERE request_id = }
		  . QuerygateTest::sql_quote($rid));
	return $recorded ne '';
});
is($recorded, 'sql|-|true', 'execute_sql is in the run history as SQL, by its hash');
$res = rpc($key, 'tools/call', { name => 'execute_sql', arguments => { sql => 'SELECT aid FROM accounts ORDER BY aid', page_size => 2 } });
is_deeply($res->{json}{result}{structuredContent}, { rows => [ { aid => 1 }, { aid => 2 } ], has_more => JSON::PP::true },
	'paged as the saved queries\' tools are');
$res = rpc($key, 'tools/call', { name => 'execute_sql', arguments => { sql => 'SELECT id FROM nosuchx' } });
ok($res->{json}{result}{isError}, 'a refused statement: the tool\'s error');
is(decode_json($res->{json}{result}{content}[0]{text})->{code}, 'name_not_allowed', 'with the code POST /sql answers');
$res = rpc($key, 'tools/call', { name => 'execute_sql', arguments => {} });
is(decode_json($res->{json}{result}{content}[0]{text})->{code}, 'invalid_body', 'no statement: invalid_body');

$res = rpc($key, 'tools/call', { name => 'list_tables', arguments => {} });
my $listing = $res->{json}{result}{structuredContent};
is_deeply([ map { $_->{name} } @{ $listing->{tables} } ], [qw(accounts branches events_2024 rich secrets)],
	'list_tables: the tables');
ok(!grep({ exists $_->{ddl} } @{ $listing->{tables} }), 'without their DDL');
my $now = $qg->get('/schema', key => $key)->{json};
delete $_->{ddl} for @{ $now->{tables} };
is_deeply($listing, $now, 'what GET /schema answers, but the DDL');
$res = rpc($key, 'tools/call', { name => 'describe_table', arguments => { table => 'public.branches' } });
is($res->{json}{result}{structuredContent}{tables}[0]{ddl}, $table{branches}{ddl}, 'describe_table: one table, with its DDL');
$res = rpc($key, 'tools/call', { name => 'describe_table', arguments => { table => 'nosuchx' } });
is(decode_json($res->{json}{result}{content}[0]{text})->{code}, 'name_not_allowed', 'a table not there: the tool\'s error');

# --- the official SDK client (test/clients/mcp_client.mjs), which checks each answer against its
# tool's outputSchema
my ($out, $err) = ('', '');
IPC::Run::run([ $node, "$clients/mcp_client.mjs", "http://127.0.0.1:" . $qg->port . '/mcp', $key,
		JSON::PP->new->encode([
			{ name => 'execute_sql', arguments => { sql => 'SELECT aid, bid FROM accounts WHERE aid <= :n ORDER BY aid', params => { n => 2 } } },
			{ name => 'list_tables', arguments => {} },
			{ name => 'describe_table', arguments => { table => 'accounts' } },
			{ name => 'execute_sql', arguments => { sql => 'SELECT id FROM pg_class' } } ]) ],
	'>', \$out, '2>', \$err);
my $sdk = eval { decode_json($out) };
ok($sdk, 'the SDK client connects') or diag("mcp_client.mjs: $err");
is_deeply([ map { $_->{name} } @{ $sdk->{tools} // [] } ], [qw(execute_sql list_tables describe_table)], 'and lists the tools');
my ($rows, $tables, $one, $refused) = @{ $sdk->{calls} // [] };
is_deeply($rows->{structuredContent}{rows}, [ { aid => 1, bid => 2 }, { aid => 2, bid => 1 } ], 'execute_sql through the SDK')
  or diag(explain($rows));
ok($tables && !$tables->{thrown} && @{ $tables->{structuredContent}{tables} // [] } == 5,
	'list_tables through the SDK, its answer as its outputSchema says') or diag(explain($tables));
like($one->{structuredContent}{tables}[0]{ddl} // '', qr/^CREATE TABLE public\.accounts/, 'describe_table too')
  or diag(explain($one));
ok($refused->{isError}, 'a refusal: isError');

done_testing();
