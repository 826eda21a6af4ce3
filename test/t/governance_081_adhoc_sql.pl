# POST /sql: SQL a caller writes, for a policy granted it (grant_adhoc), governed as its saved
# queries are. Who may (403 sql_not_allowed otherwise); the body; one statement of a saved
# query's kinds (400 invalid_sql, with PostgreSQL's message); names outside the allow-list and
# names of nothing answered alike (403 name_not_allowed, byte for byte but the request id),
# reg* lookups, catalogs and a table's row type included; built-ins that read the catalogs or
# settings refused (403 function_not_allowed) while the clock, formatting and immutable functions
# run; writes only with the grant's own write operations; masks, parameters, formats, paging and
# exports as for /q/{name}; the server's work_mem and temp_file_limit for SQL; statements kept per
# worker within querygate.adhoc_cache_size; the run history's record of each call (kind 'sql', its
# statement as querygate.history_sql keeps it); and a change of the policy seen by the next call.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

# The time limit is long enough for the statement that spills under Valgrind (make test-valgrind).
my $qg = QuerygateTest->start(name => 'adhoc_sql',
	conf => "querygate.allow_writes = on\nquerygate.adhoc_cache_size = 2\nquerygate.statement_timeout = 120000\n");
$qg->sql(q{
	CREATE ROLE adhoc_reader NOLOGIN;
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int, owner text);
	CREATE TABLE secrets (id int PRIMARY KEY, secret text);
	INSERT INTO accounts SELECT g, (g - 1) / 5 + 1, 100 * g, 'owner-' || g FROM generate_series(1, 10) g;
	INSERT INTO secrets SELECT g, 'secret-' || g FROM generate_series(1, 3) g;
	GRANT SELECT, UPDATE ON accounts, secrets TO adhoc_reader;
	CREATE FUNCTION twice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
	CREATE FUNCTION plus_one(int, int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + $2';
	CREATE OPERATOR =#= (leftarg = int, rightarg = int, function = plus_one);
});
my $plain = $qg->access(policy => 'plain', run_as => 'adhoc_reader');
my $key = $qg->access(policy => 'analyst', run_as => 'adhoc_reader');

sub sql_call
{
	my ($sql, %o) = @_;
	my $body = { sql => $sql, %{ $o{body} // {} } };
	$body->{params} = $o{params} if $o{params};
	return $qg->post('/sql' . ($o{query} // ''), $body, key => $o{key} // $key, %{ $o{request} // {} });
}

# --- who may
my $res = sql_call('SELECT 1 AS one', key => $plain);
$qg->expect_error($res, 403, 'sql_not_allowed', 'a policy not granted SQL');
$res = sql_call('SELECT 1 AS one');
$qg->expect_error($res, 403, 'sql_not_allowed', 'granted nothing yet');
$qg->sql(q{
	SELECT querygate.grant_writes('analyst', '{update}');
	SELECT querygate.allow_tables('analyst', '{accounts}');
	SELECT querygate.grant_adhoc('analyst');
});
$res = sql_call('SELECT aid, abalance FROM accounts WHERE aid = :aid', params => { aid => 3 });
$qg->expect_rows($res, [ { aid => 3, abalance => 300 } ], 'a lookup with a parameter');
$res = $qg->post('/sql', { sql => 'SELECT 1 AS one' });
$qg->expect_error($res, 401, 'unauthorized', 'no key');

# --- the request
$res = $qg->get('/sql?sql=SELECT+1', key => $key);
$qg->expect_error($res, 405, 'method_not_allowed', 'GET /sql');
is($res->{headers}{allow}, 'POST', 'GET /sql: Allow: POST');
$res = $qg->post('/sql', { params => {} }, key => $key);
$qg->expect_error($res, 400, 'invalid_body', 'no statement');
$res = $qg->post('/sql', { sql => 42 }, key => $key);
$qg->expect_error($res, 400, 'invalid_body', 'a statement that is not a string');
$res = $qg->post('/sql', { sql => 'SELECT 1 AS one', query => 'x' }, key => $key);
$qg->expect_error($res, 400, 'invalid_body', 'an unknown field');
$res = sql_call('SELECT aid FROM accounts WHERE aid = :aid');
$qg->expect_error($res, 400, 'param_required', 'a parameter not given', param => 'aid');
$res = sql_call('SELECT aid FROM accounts WHERE aid = :aid', params => { aid => 'x' });
$qg->expect_error($res, 400, 'param_invalid', 'a parameter its type refuses', param => 'aid');

# --- one statement PostgreSQL accepts, of a saved query's kinds
$res = sql_call('SELEC aid FROM accounts');
$qg->expect_error($res, 400, 'invalid_sql', 'a syntax error', names => qr/syntax error at or near "SELEC".*at character 1/);
$res = sql_call('SELECT 1 AS a; SELECT 2 AS b');
$qg->expect_error($res, 400, 'invalid_sql', 'two statements', names => qr/one SELECT/);
$res = sql_call('SET search_path = public');
$qg->expect_error($res, 400, 'invalid_sql', 'a utility statement');
$res = sql_call('SELECT aid INTO TEMP t2 FROM accounts');
$qg->expect_error($res, 400, 'invalid_sql', 'SELECT INTO');
$res = sql_call('SELECT nosuch FROM accounts');
$qg->expect_error($res, 400, 'invalid_sql', 'a column that is not there', names => qr/column "nosuch" does not exist/);
$res = sql_call('SELECT 1 AS one WHERE :x IS NULL', params => { x => 1 });
$qg->expect_error($res, 400, 'invalid_sql', 'a parameter of no type', names => qr/parameter :x/);
$res = sql_call('SELECT aid FROM accounts WHERE aid = $1');
$qg->expect_error($res, 400, 'invalid_sql', 'a $n parameter', names => qr/:name placeholders/);

# --- names outside the allow-list, and names of nothing, answered alike (each pair's names of one
# length: the answer says where the refused name is)
my @names = (
	[ 'a table not listed', 'SELECT id FROM secrets', 'a table that is not there', 'SELECT id FROM nosuch' ],
	[ 'a qualified table not listed', 'SELECT id FROM public.secrets', 'in a schema that is not there',
		'SELECT id FROM nosuch.secrets' ],
	[ 'a catalog', 'SELECT relname FROM pg_class', 'a catalog that is not there', 'SELECT relname FROM pg_nosuch' ],
	[ 'regclass of a table', q{SELECT 'secrets'::regclass AS r}, 'regclass of nothing', q{SELECT 'nosuchx'::regclass AS r} ],
	[ 'a regclass argument', q{SELECT pg_relation_size('secrets') AS n}, 'a regclass argument naming nothing',
		q{SELECT pg_relation_size('nosuchx') AS n} ],
	[ 'regrole of a role', q{SELECT 'adhoc_reader'::regrole AS r}, 'regrole of nothing', q{SELECT 'nobody_at_al'::regrole AS r} ],
	[ 'regclass as a function', q{SELECT regclass('secrets') AS r}, 'of nothing', q{SELECT regclass('nosuchx') AS r} ],
	[ "a table's row type", 'SELECT NULL::secrets AS r', 'the type of nothing', 'SELECT NULL::nosuchx AS r' ],
	[ "an array of a table's row type", 'SELECT NULL::secrets[] AS r', 'an array of nothing', 'SELECT NULL::nosuchx[] AS r' ],
	[ "a column of a table's row type", 'SELECT (NULL::secrets).secret AS r', "a column of nothing's",
		'SELECT (NULL::nosuchx).secret AS r' ],
	[ 'a function that is not built-in', 'SELECT twice(aid) AS v FROM accounts', 'a function that is not there',
		'SELECT thrice(aid) AS v FROM accounts' ],
	[ 'an operator that is not built-in', 'SELECT aid =#= 1 AS v FROM accounts', 'an operator that is not there',
		'SELECT aid =%= 1 AS v FROM accounts' ],
	[ 'a built-in of other argument types', 'SELECT twice(aid) AS v FROM accounts', 'a built-in of argument types it lacks',
		'SELECT lower(aid) AS v FROM accounts' ],
);
for my $n (@names)
{
	my ($what, $sql, $other, $nothing) = @$n;
	my $a = sql_call($sql);
	$qg->expect_error($a, 403, 'name_not_allowed', $what);
	my $b = sql_call($nothing);
	$qg->expect_error($b, 403, 'name_not_allowed', $other);
	is(QuerygateTest::body_without_request_id($b), QuerygateTest::body_without_request_id($a),
		"$what and $other: the same answer");
}
for my $column ('xmin', 'ctid', 'tableoid')
{
	$res = sql_call("SELECT aid, $column FROM accounts WHERE aid = 1");
	$qg->expect_error($res, 403, 'name_not_allowed', "the system column $column",
		names => qr/system column.*at character 13/);
}
$res = sql_call('SELECT aid FROM accounts WHERE ctid = $$(0,1)$$::tid');
$qg->expect_error($res, 403, 'name_not_allowed', 'a system column in a predicate');
$res = sql_call('SELECT 1259::oid::regclass AS r');
$qg->expect_error($res, 403, 'name_not_allowed', 'an oid turned into a name');
$res = sql_call('WITH secrets AS (SELECT 1 AS id) SELECT id FROM secrets');
$qg->expect_rows($res, [ { id => 1 } ], 'a WITH query named like a table not listed');
$res = sql_call('SELECT aid FROM accounts WHERE aid IN (SELECT id FROM secrets)');
$qg->expect_error($res, 403, 'name_not_allowed', 'a table not listed in a sublink');

# --- functions
for my $f ([ q{current_setting('search_path')}, 'current_setting()' ], [ 'version()', 'version()' ],
	[ 'current_user', 'current_user' ], [ 'inet_server_port()', 'inet_server_port()' ],
	[ q{has_table_privilege('secrets', 'SELECT')}, 'has_table_privilege()' ],
	[ 'pg_postmaster_start_time()', 'pg_postmaster_start_time()' ], [ 'pg_backend_pid()', 'pg_backend_pid()' ])
{
	$res = sql_call("SELECT $f->[0] AS v");
	$qg->expect_error($res, 403, 'function_not_allowed', "SELECT $f->[0]", names => qr/\Q$f->[1]\E/);
}
$res = sql_call(q{SELECT lower(owner) AS o, format('%s-%s', aid, bid) AS f, to_char(now(), 'YYYY') = to_char(current_date, 'YYYY') AS same_year, ARRAY[aid, bid]::text AS a FROM accounts WHERE aid = 1});
$qg->expect_rows($res, [ { o => 'owner-1', f => '1-1', same_year => JSON::PP::true, a => '{1,1}' } ],
	'immutable functions, the clock, formatting and arrays as text');

# --- writes: only the grant's own
$res = sql_call('UPDATE accounts SET abalance = abalance + 1 WHERE aid = 1 RETURNING abalance');
$qg->expect_error($res, 403, 'write_op_not_allowed', 'a write not granted to SQL');
is($qg->sql('SELECT abalance FROM accounts WHERE aid = 1'), '100', 'nothing written');
$qg->sql(q{SELECT querygate.grant_adhoc('analyst', write_ops => '{update}')});
$res = sql_call('UPDATE accounts SET abalance = abalance + 1 WHERE aid = 1 RETURNING abalance');
$qg->expect_rows($res, [ { abalance => 101 } ], 'a write granted to SQL');

# --- masks, formats, paging, exports
$qg->sql(q{SELECT querygate.mask('analyst', 'accounts.owner', 'mask')});
$res = sql_call('SELECT aid, owner FROM accounts WHERE aid = 2');
is($res->{status}, 200, 'a masked column: 200') or diag(QuerygateTest::describe($res));
isnt($res->{json}[0]{owner}, 'owner-2', 'a masked column is masked');
$res = sql_call(q{SELECT aid FROM accounts WHERE owner = 'owner-2'});
$qg->expect_error($res, 403, 'mask_predicate', 'a filter on a masked column');
$res = sql_call('SELECT upper(owner) AS o FROM accounts WHERE aid = 2');
$qg->expect_error($res, 403, 'mask_expression', 'a masked column computed with');
$res = sql_call('SELECT aid FROM accounts ORDER BY aid', body => { page_size => 3, page => 2 });
$qg->expect_rows($res, [ { aid => 4 }, { aid => 5 }, { aid => 6 } ], 'paging');
is($res->{headers}{'x-has-more'}, 'true', 'paging: X-Has-More');
$res = sql_call('SELECT aid, bid FROM accounts WHERE aid <= 2 ORDER BY aid', body => { format => 'csv' });
is($res->{status}, 200, 'csv: 200');
is($res->{content}, "aid,bid\r\n1,1\r\n2,1\r\n", 'csv: the rows');
$res = sql_call('SELECT aid FROM accounts ORDER BY aid', body => { stream => JSON::PP::true, format => 'ndjson' });
is($res->{status}, 200, 'an export: 200') or diag(QuerygateTest::describe($res));
like($res->{headers}{'content-disposition'} // '', qr/filename="sql\.ndjson"/, 'an export: its file name');
is(scalar(split /\n/, $res->{content}), 10, 'an export: every row');

# --- memory and temporary files: the server's limits for SQL a caller wrote
my $spill = 'SELECT count(*)::int AS n FROM (SELECT DISTINCT g FROM generate_series(1, 300000) g) s';
$res = sql_call($spill);
$qg->expect_rows($res, [ { n => 300000 } ], 'a statement that spills, under the default limits');
$qg->set_and_reload('querygate.adhoc_work_mem', '64kB');
$qg->set_and_reload('querygate.adhoc_temp_file_limit', '64kB');
ok(QuerygateTest::poll_until(sub { sql_call($spill)->{status} == 500 }), 'past adhoc_temp_file_limit: the call fails');
$qg->expect_error(sql_call($spill), 500, 'query_failed', 'past adhoc_temp_file_limit');
$qg->sql('ALTER SYSTEM RESET querygate.adhoc_work_mem');
$qg->sql('ALTER SYSTEM RESET querygate.adhoc_temp_file_limit');
$qg->sql('SELECT pg_reload_conf()');
ok(QuerygateTest::poll_until(sub { sql_call($spill)->{status} == 200 }), 'the limits reset: it runs again');

# --- kept statements: more than querygate.adhoc_cache_size, in turn, each still right
for my $round (1 .. 3)
{
	for my $aid (4 .. 6)
	{
		$res = sql_call("SELECT aid, bid FROM accounts WHERE aid = $aid");
		$qg->expect_rows($res, [ { aid => $aid, bid => 1 + int(($aid - 1) / 5) } ], "round $round, literal $aid");
	}
}

# --- the run history: each call of SQL as such (kind 'sql', no query name), its statement as
# querygate.history_sql keeps it: its hash by default, its text, or nothing
sub history_of
{
	my ($rid) = @_;
	my $row;
	QuerygateTest::poll_until(sub {
		$row = $qg->sql("SELECT kind || '|' || coalesce(query, '-') || '|' || coalesce(sql, '-') || '|' || status"
			  . ' FROM querygate.history WHERE request_id = ' . QuerygateTest::sql_quote($rid));
		return $row ne '';
	});
	return $row;
}
my $stmt = 'SELECT aid FROM accounts WHERE aid = :aid';
$res = sql_call($stmt, params => { aid => 7 });
my $hash = $qg->sql('SELECT encode(sha256(convert_to(' . QuerygateTest::sql_quote($stmt) . q{, 'UTF8')), 'hex')});
is(history_of($res->{headers}{'x-request-id'}), "sql|-|sha256:$hash|200", 'history: kind sql, no name, the hash by default');
$res = sql_call('SELECT id FROM nosuch');
is(history_of($res->{headers}{'x-request-id'}) =~ s/\|sha256:[0-9a-f]{64}\|/|hash|/r, 'sql|-|hash|403',
	'history: a refused statement too');
# A reload reaches the worker between two calls: calls are made until one is recorded the new way.
sub recorded_after_reload
{
	my ($want) = @_;
	my $got = '';
	QuerygateTest::poll_until(sub {
		$got = history_of(sql_call($stmt, params => { aid => 7 })->{headers}{'x-request-id'});
		return $got eq $want;
	});
	return $got;
}
$qg->set_and_reload('querygate.history_sql', 'text');
is(recorded_after_reload("sql|-|$stmt|200"), "sql|-|$stmt|200", 'history_sql = text: the statement');
$qg->set_and_reload('querygate.history_sql', 'off');
is(recorded_after_reload('sql|-|-|200'), 'sql|-|-|200', 'history_sql = off: nothing of it');
$res = $qg->post('/q/nosuch', undef, key => $key);
is(history_of($res->{headers}{'x-request-id'}), 'query|nosuch|-|404', 'history: a saved query\'s call is kind query');

# --- a change of the policy, seen by the next call
$qg->sql(q{SELECT querygate.allow_tables('analyst', '{accounts,secrets}')});
$res = sql_call('SELECT id FROM secrets WHERE id = 1');
$qg->expect_rows($res, [ { id => 1 } ], 'a table listed since');
$qg->sql(q{SELECT querygate.revoke_adhoc('analyst')});
$res = sql_call('SELECT id FROM secrets WHERE id = 1');
$qg->expect_error($res, 403, 'sql_not_allowed', 'after revoke_adhoc');

done_testing();
