# Table allow-lists (querygate.allow_tables): every relation a statement reads or writes, at every
# level, must be listed, and a view counts as itself. The escapes people try: views, CTEs,
# sublinks in WHERE, HAVING, ORDER BY and the select list, LATERAL, set operations, subqueries in
# FROM, DML targets, UPDATE ... FROM, DELETE ... USING, RETURNING and data-modifying CTEs: each is
# 403 table_not_allowed naming the table, and a refused write changes nothing. grant_query refuses
# a query outside the list (42501); a list changed after granting applies to the next call.
# Every call is also sent as POST /sql with the query's text, by a twin of its policy granted
# ad-hoc SQL with the same list and writes (QuerygateTest::both): it answers alike, except that a
# relation outside the list is 403 name_not_allowed there (naming nothing, as a name of nothing
# is answered), and that the twin of a policy without a list has one of every relation here
# (ad-hoc SQL needs one), which leaves the system catalog out.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'allow_list', conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE ROLE gov_reader NOLOGIN;
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int);
	CREATE TABLE branches (bid int PRIMARY KEY, bname text);
	CREATE TABLE secrets (id int PRIMARY KEY, secret text);
	INSERT INTO branches VALUES (1, 'north'), (2, 'south');
	INSERT INTO accounts SELECT g, (g - 1) / 5 + 1, 100 * g FROM generate_series(1, 10) g;
	INSERT INTO secrets SELECT g, 'secret-' || g FROM generate_series(1, 10) g;
	CREATE VIEW v_secrets AS SELECT id, secret FROM secrets;
	CREATE VIEW v_accounts AS SELECT aid, abalance FROM accounts;
	GRANT SELECT, INSERT, UPDATE, DELETE ON accounts, branches, secrets, v_secrets, v_accounts TO gov_reader;
});

# name => [sql, the relation the refusal must name, what a refused call would have changed]
my @escapes = (
	[ view_unlisted => 'SELECT id, secret FROM v_secrets WHERE id = :id', 'public.v_secrets' ],
	[ view_over_listed_table => 'SELECT aid, abalance FROM v_accounts WHERE aid = :id', 'public.v_accounts' ],
	[ join => 'SELECT a.aid, s.secret FROM accounts a JOIN secrets s ON s.id = a.aid WHERE a.aid = :id',
		'public.secrets' ],
	[ cte => 'WITH s AS (SELECT id, secret FROM secrets) SELECT a.aid, s.secret FROM accounts a JOIN s ON s.id = a.aid WHERE a.aid = :id',
		'public.secrets' ],
	[ nested_cte => 'WITH o AS (WITH s AS (SELECT id FROM secrets) SELECT id FROM s) SELECT aid FROM accounts WHERE aid = :id AND aid IN (SELECT id FROM o)',
		'public.secrets' ],
	[ sublink_where_in => 'SELECT aid FROM accounts WHERE aid = :id AND aid IN (SELECT id FROM secrets)',
		'public.secrets' ],
	[ sublink_exists => 'SELECT aid FROM accounts a WHERE a.aid = :id AND EXISTS (SELECT 1 FROM secrets s WHERE s.id = a.aid)',
		'public.secrets' ],
	[ sublink_select_list => 'SELECT aid, (SELECT secret FROM secrets WHERE id = aid) AS s FROM accounts WHERE aid = :id',
		'public.secrets' ],
	[ sublink_in_function_argument => 'SELECT aid, coalesce((SELECT max(secret) FROM secrets), \'-\') AS s FROM accounts WHERE aid = :id',
		'public.secrets' ],
	[ sublink_having => 'SELECT bid, count(*)::int AS n FROM accounts WHERE aid = :id GROUP BY bid HAVING count(*) < (SELECT count(*) FROM secrets)',
		'public.secrets' ],
	[ sublink_order_by => 'SELECT aid FROM accounts WHERE aid = :id ORDER BY (SELECT min(secret) FROM secrets WHERE id = aid)',
		'public.secrets' ],
	[ sublink_view => 'SELECT aid FROM accounts WHERE aid = :id AND aid IN (SELECT id FROM v_secrets)', 'public.v_secrets' ],
	[ lateral => 'SELECT a.aid, s.secret FROM accounts a CROSS JOIN LATERAL (SELECT secret FROM secrets WHERE id = a.aid) s WHERE a.aid = :id',
		'public.secrets' ],
	[ subquery_in_from => 'SELECT x.id, x.secret FROM (SELECT id, secret FROM secrets) x WHERE x.id = :id', 'public.secrets' ],
	[ union_all => 'SELECT aid AS v FROM accounts WHERE aid = :id UNION ALL SELECT id FROM secrets WHERE id = :id',
		'public.secrets' ],
	[ intersect => 'SELECT aid AS v FROM accounts WHERE aid = :id INTERSECT SELECT id FROM secrets', 'public.secrets' ],
	[ except => 'SELECT aid AS v FROM accounts WHERE aid = :id EXCEPT SELECT id FROM secrets WHERE id > 100',
		'public.secrets' ],
	[ system_catalog => 'SELECT aid, (SELECT count(*)::int FROM pg_catalog.pg_class) AS n FROM accounts WHERE aid = :id',
		'pg_catalog.pg_class' ],
	[ table_syntax => 'SELECT t.id FROM (TABLE secrets) t WHERE t.id = :id', 'public.secrets' ],
	[ union_in_sublink => 'SELECT aid FROM accounts WHERE aid = :id AND aid IN (SELECT bid FROM branches UNION SELECT id FROM secrets)',
		'public.secrets' ],
);

# Writes that would change something if they ran: name => [sql, names, check SQL, what it returns untouched]
my @write_escapes = (
	[ insert_target => q{INSERT INTO secrets (id, secret) VALUES (:id + 100, 'planted')}, 'public.secrets',
		'SELECT count(*) FROM secrets' ],
	[ update_from => 'UPDATE accounts a SET abalance = a.abalance + 1 FROM secrets s WHERE s.id = a.aid AND a.aid = :id',
		'public.secrets', 'SELECT sum(abalance) FROM accounts' ],
	[ delete_using => 'DELETE FROM accounts a USING secrets s WHERE s.id = a.aid AND a.aid = :id', 'public.secrets',
		'SELECT count(*) FROM accounts' ],
	[ returning_sublink => 'UPDATE accounts SET abalance = abalance + 1 WHERE aid = :id RETURNING aid, (SELECT secret FROM secrets WHERE id = aid) AS s',
		'public.secrets', 'SELECT sum(abalance) FROM accounts' ],
	[ update_where_sublink => 'UPDATE accounts SET abalance = abalance + 1 WHERE aid = :id AND aid IN (SELECT id FROM secrets)',
		'public.secrets', 'SELECT sum(abalance) FROM accounts' ],
	[ dml_cte_delete => 'WITH d AS (DELETE FROM secrets WHERE id = :id RETURNING id) SELECT count(*)::int AS n FROM d',
		'public.secrets', 'SELECT count(*) FROM secrets' ],
	[ dml_cte_insert_from_unlisted => 'WITH i AS (INSERT INTO accounts (aid, bid, abalance) SELECT id + 1000, 1, 0 FROM secrets WHERE id = :id RETURNING aid) SELECT aid FROM i',
		'public.secrets', 'SELECT count(*) FROM accounts' ],
	[ insert_select => 'INSERT INTO accounts (aid, bid, abalance) SELECT id + 2000, 1, 0 FROM secrets WHERE id = :id',
		'public.secrets', 'SELECT count(*) FROM accounts' ],
	[ insert_into_view => q{INSERT INTO v_secrets (id, secret) VALUES (:id + 300, 'planted')}, 'public.v_secrets',
		'SELECT count(*) FROM secrets' ],
);

my @fine = (
	[ ok_join => 'SELECT a.aid, b.bname FROM accounts a JOIN branches b USING (bid) WHERE a.aid = :id' ],
	[ ok_update => 'UPDATE accounts SET abalance = abalance + 1 WHERE aid = :id RETURNING aid, abalance' ],
);

$qg->sql(join('', map { 'SELECT querygate.save_query(' . sql_quote($_->[0]) . ', ' . sql_quote($_->[1]) . ");\n" }
	  @escapes, @write_escapes, @fine));
my @all = map { $_->[0] } @escapes, @write_escapes, @fine;

# Granted before the list exists (grant_query checks the list), then listed.
my $limited = $qg->access(policy => 'limited', run_as => 'gov_reader', queries => \@all);
my $wide = $qg->access(policy => 'wide', run_as => 'gov_reader', queries => \@all);
$qg->sql(q{
	SELECT querygate.grant_writes('limited', '{insert,update,delete}');
	SELECT querygate.grant_writes('wide', '{insert,update,delete}');
	SELECT querygate.allow_tables('limited', '{accounts,branches}');
});
is($qg->sql(q{SELECT allowed_tables::text FROM querygate.policies WHERE name = 'limited'}), '{accounts,branches}',
	'the policies view shows the list');
$qg->adhoc_twin($_, tables => [qw(accounts branches secrets v_secrets v_accounts)]) for qw(limited wide);
# Through POST /sql, what the list leaves out is a name not allowed.
my @unlisted = (sql => [ 403, 'name_not_allowed' ]);

# --- what the list allows works
$qg->expect_rows($_, [ { aid => 3, bname => 'north' } ], 'a join of two listed tables')
  for $qg->post_both('/q/ok_join?id=3', undef, key => $limited);
$qg->expect_rows($_, [ { aid => 3, abalance => 301 } ], 'an UPDATE ... RETURNING of a listed table')
  for $qg->post_both('/q/ok_update?id=3', undef, key => $limited,
	between => sub { $qg->sql('UPDATE accounts SET abalance = 300 WHERE aid = 3') });

# --- every escape is refused, naming the table
for my $e (@escapes)
{
	my ($name, $sql, $table) = @$e;
	$qg->expect_error($_, 403, 'table_not_allowed', $name, names => qr/\Q$table\E\b/, @unlisted)
	  for $qg->post_both("/q/$name?id=2", undef, key => $limited);
}
for my $e (@write_escapes)
{
	my ($name, $sql, $table, $check) = @$e;
	my $before = $qg->sql($check);
	$qg->expect_error($_, 403, 'table_not_allowed', $name, names => qr/\Q$table\E\b/, @unlisted)
	  for $qg->post_both("/q/$name?id=2", undef, key => $limited);
	is($qg->sql($check), $before, "$name: nothing changed in the database by either path ($check)");
}
is($qg->sql('SELECT abalance FROM accounts WHERE aid = 2'), '200', 'account 2 untouched by every refused write');

# --- the same queries run for a policy without a list: the refusals were the list's
for my $e (@escapes)
{
	my ($saved, $adhoc) = $qg->post_both("/q/$e->[0]?id=2", undef, key => $wide);
	is($saved->{status}, 200, "$e->[0]: 200 for a policy without a list") or diag(QuerygateTest::describe($saved));
	if ($e->[0] eq 'system_catalog')
	{
		$qg->expect_error($adhoc, 403, 'name_not_allowed', "$e->[0]: the twin's list holds no catalog");
	}
	else
	{
		$qg->same_answer($saved, $adhoc, "$e->[0] for a policy without a list");
	}
}
$qg->expect_rows($_, [ { aid => 2, s => 'secret-2' } ], 'sublink_select_list reads secrets when unlisted')
  for $qg->post_both('/q/sublink_select_list?id=2', undef, key => $wide);
for my $e (@write_escapes)
{
	next if $e->[0] =~ /^insert_(target|into_view)$/;    # those insert whatever the id
	my ($saved, $adhoc) = $qg->post_both("/q/$e->[0]?id=0", undef, key => $wide);
	is($saved->{status}, 200, "$e->[0]: 200 for a policy without a list (matching no row)")
	  or diag(QuerygateTest::describe($saved));
	$qg->same_answer($saved, $adhoc, "$e->[0] for a policy without a list (matching no row)");
}

# --- a listed view is allowed without its base table; a view over a listed table is not
$qg->sql(q{SELECT querygate.allow_tables('limited', '{accounts,branches,v_secrets}')});
$qg->expect_rows($_, [ { id => 4, secret => 'secret-4' } ], 'a listed view over an unlisted table')
  for $qg->post_both('/q/view_unlisted?id=4', undef, key => $limited);
$qg->expect_rows($_, [ { aid => 4 } ], 'a listed view in a sublink')
  for $qg->post_both('/q/sublink_view?id=4', undef, key => $limited);
$qg->expect_error($_, 403, 'table_not_allowed', 'its base table read directly is still refused',
	names => qr/public\.secrets\b/, @unlisted)
  for $qg->post_both('/q/join?id=4', undef, key => $limited);
$qg->expect_error($_, 403, 'table_not_allowed', 'a view is judged as itself, not by its (listed) base table',
	names => qr/public\.v_accounts\b/, @unlisted)
  for $qg->post_both('/q/view_over_listed_table?id=4', undef, key => $limited);

# --- a list changed after granting is enforced on the next call
$qg->expect_rows($_, [ { aid => 6, bname => 'south' } ], 'ok_join before the list changes')
  for $qg->post_both('/q/ok_join?id=6', undef, key => $limited);
$qg->sql(q{SELECT querygate.allow_tables('limited', '{accounts}')});
$qg->expect_error($_, 403, 'table_not_allowed', 'ok_join once branches left the list', names => qr/public\.branches\b/,
	@unlisted)
  for $qg->post_both('/q/ok_join?id=6', undef, key => $limited);
$qg->sql(q{SELECT querygate.allow_tables('limited', '{branches,accounts}')});
$qg->expect_rows($_, [ { aid => 6, bname => 'south' } ], 'ok_join once branches is back')
  for $qg->post_both('/q/ok_join?id=6', undef, key => $limited);

# A rolled-back change never reaches the workers.
$qg->sql(q{BEGIN; SELECT querygate.allow_tables('limited', '{accounts}'); ROLLBACK;});
$qg->expect_rows($_, [ { aid => 6, bname => 'south' } ], 'a rolled-back allow_tables changes nothing')
  for $qg->post_both('/q/ok_join?id=6', undef, key => $limited);

# --- grant_query refuses a query outside the list
$qg->sql(q{
	SELECT querygate.save_query('late_secret', 'SELECT aid, (SELECT secret FROM secrets WHERE id = aid) AS s FROM accounts WHERE aid = :id');
	SELECT querygate.save_query('late_ok', 'SELECT b.bname FROM branches b WHERE b.bid = :id');
});
my $err = sql_error($qg, q{SELECT querygate.grant_query('limited', 'late_secret')});
like($err, qr/^42501 .*secrets/, 'grant_query of a query reading an unlisted table: 42501 naming it') or diag($err);
is($qg->sql(q{SELECT count(*) FROM querygate.query_grant WHERE policy = 'limited' AND query = 'late_secret'}), '0',
	'the refused grant left no row');
# Its text sent as SQL is refused as well: the list, not the grant, keeps secrets out.
$qg->expect_error($_, 404, 'query_not_found', 'the query whose grant was refused', sql => [ 403, 'name_not_allowed' ])
  for $qg->post_both('/q/late_secret?id=1', undef, key => $limited);
$err = sql_error($qg, q{SELECT querygate.grant_query('limited', 'view_over_listed_table')});
like($err, qr/^42501 .*v_accounts/, 'grant_query of a view over a listed table: 42501 naming the view') or diag($err);
is(sql_error($qg, q{SELECT querygate.grant_query('limited', 'late_ok')}), 'no error',
	'grant_query of a query inside the list');
$qg->expect_rows($_, [ { bname => 'south' } ], 'the query granted inside the list')
  for $qg->post_both('/q/late_ok?id=2', undef, key => $limited);

# explain says why.
is( $qg->sql(q{SELECT querygate.explain('limited', 'lateral')->'refused'->>'code'}), 'table_not_allowed',
	'explain: the lateral escape is refused with table_not_allowed');

# --- NULL removes the list (the twin's is then every relation here)
$qg->sql(q{SELECT querygate.allow_tables('limited', NULL)});
$qg->expect_rows($_, [ { aid => 5, secret => 'secret-5' } ], 'after allow_tables(NULL) the CTE query runs')
  for $qg->post_both('/q/cte?id=5', undef, key => $limited);
$qg->expect_rows($_, [ { n => 1 } ], 'after allow_tables(NULL) the data-modifying CTE runs')
  for $qg->post_both('/q/dml_cte_delete?id=10', undef, key => $limited,
	between => sub {
		is($qg->sql('SELECT count(*) FROM secrets WHERE id = 10'), '0', 'the saved query deleted the row');
		$qg->sql(q{INSERT INTO secrets VALUES (10, 'secret-10')});
	});
is($qg->sql('SELECT count(*) FROM secrets WHERE id = 10'), '0', 'and the statement deleted it again');

# An empty list allows nothing.
$qg->sql(q{SELECT querygate.allow_tables('limited', '{}')});
$qg->expect_error($_, 403, 'table_not_allowed', 'an empty list', names => qr/public\.branches\b/, @unlisted)
  for $qg->post_both('/q/late_ok?id=2', undef, key => $limited);

done_testing();
