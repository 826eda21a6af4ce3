# Mistakes caught when they are made (src/policy/privilege_check.hpp): grant_query of a query whose
# policy's role lacks a privilege it needs on a table (the table, one of its columns, or the write)
# warns, naming the role, the privilege and the table; explain says missing_privilege; /openapi.json,
# /catalog and MCP's tools/list leave the query out while every call would be 403
# permission_denied, and list it once the privilege is granted. A view read through its owner's
# privileges needs none on the table.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'grant_privileges', conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE TABLE gp_open (id int PRIMARY KEY, label text);
	CREATE TABLE gp_closed (id int PRIMARY KEY, label text);
	CREATE TABLE gp_cols (id int PRIMARY KEY, secret text);
	INSERT INTO gp_open VALUES (1, 'one');
	INSERT INTO gp_closed VALUES (1, 'one');
	INSERT INTO gp_cols VALUES (1, 's');
	CREATE VIEW gp_view AS SELECT id, label FROM gp_closed;
	SELECT querygate.save_query('gp_fine', 'SELECT id, label FROM gp_open WHERE id = :id');
	SELECT querygate.save_query('gp_table', 'SELECT id, label FROM gp_closed WHERE id = :id');
	SELECT querygate.save_query('gp_sub', 'SELECT id FROM gp_open WHERE id IN (SELECT id FROM gp_closed)');
	SELECT querygate.save_query('gp_column', 'SELECT id, secret FROM gp_cols WHERE id = :id');
	SELECT querygate.save_query('gp_own_column', 'SELECT id FROM gp_cols WHERE id = :id');
	SELECT querygate.save_query('gp_insert', 'INSERT INTO gp_open (id, label) VALUES (:id, :label)');
	SELECT querygate.save_query('gp_view', 'SELECT id, label FROM gp_view WHERE id = :id');
});
$qg->role('gp_role', select => [ 'gp_open', 'gp_view' ]);
$qg->sql('GRANT SELECT (id) ON gp_cols TO gp_role');
$qg->sql(q{SELECT querygate.create_policy('gp_pol', 'gp_role');
	SELECT querygate.grant_writes('gp_pol', '{insert}');});

# --- at grant: a warning that names the role, the privilege and the table
my %missing = (
	gp_table => 'SELECT on public.gp_closed',
	gp_sub => 'SELECT on public.gp_closed',
	gp_column => 'SELECT on public.gp_cols',
	gp_insert => 'INSERT on public.gp_open',
);
for my $q (qw(gp_fine gp_table gp_sub gp_column gp_own_column gp_insert gp_view))
{
	my ($rc, $out, $err) = $qg->node->psql('postgres', "SELECT querygate.grant_query('gp_pol', '$q')");
	is($rc, 0, "grant_query of $q succeeds");
	if ($missing{$q})
	{
		like($err, qr/WARNING:  policy "gp_pol" runs as "gp_role", which lacks \Q$missing{$q}\E: every call of saved query "$q" is refused/,
			"$q: a warning names the role and $missing{$q}");
		like($err, qr/HINT:  GRANT the privilege to "gp_role"/, "$q: and says what to do");
	}
	else
	{
		unlike($err, qr/WARNING/, "$q: no warning");
	}
	is($qg->sql("SELECT coalesce(querygate.explain('gp_pol', '$q')->>'missing_privilege', '-')"),
		$missing{$q} // '-', "explain: $q missing_privilege");
}
my $key = $qg->sql(q{SELECT querygate.create_key('gp_key', 'gp_pol')});

# --- a call is refused, and the documents do not offer the query
$qg->expect_error($qg->get('/q/gp_table?id=1', key => $key), 403, 'permission_denied', 'a call of gp_table');
is($qg->get('/q/gp_view?id=1', key => $key)->{status}, 200, 'the view, read with its owner\'s privileges: 200');
is($qg->get('/q/gp_own_column?id=1', key => $key)->{status}, 200, 'the column it may read: 200');

my @offered = qw(gp_fine gp_own_column gp_view);
sub listed
{
	my $paths = $qg->get('/openapi.json', key => $key)->{json}{paths} // {};
	my $catalog = $qg->get('/catalog', key => $key)->{json}{queries} // [];
	my $tools = $qg->post('/mcp', { jsonrpc => '2.0', id => 1, method => 'tools/list' }, key => $key)
	  ->{json}{result}{tools} // [];
	return join(' | ', join(',', sort map { s{^/q/}{}r } keys %$paths),
		join(',', sort map { $_->{name} } @$catalog), join(',', sort map { $_->{name} } @$tools));
}
my $want = join(',', @offered);
is(listed(), "$want | $want | $want",
	'OpenAPI, /catalog and tools/list offer only the queries whose calls the role may run');

# --- granted: offered at the next look
$qg->sql('GRANT SELECT ON gp_closed TO gp_role');
my $more = join(',', sort(@offered, qw(gp_table gp_sub)));
ok(QuerygateTest::poll_until(sub { listed() eq "$more | $more | $more" }),
	'once SELECT is granted, the queries that needed it are offered')
  or diag(listed());
$qg->expect_rows($qg->get('/q/gp_table?id=1', key => $key), [ { id => 1, label => 'one' } ], 'and answered');
is($qg->sql(q{SELECT coalesce(querygate.explain('gp_pol', 'gp_table')->>'missing_privilege', '-')}), '-',
	'explain: nothing missing');

done_testing();
