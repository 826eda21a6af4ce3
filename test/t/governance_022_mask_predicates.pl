# Inference through predicates: a masked column used in WHERE, a join condition (ON and USING),
# GROUP BY, HAVING, ORDER BY (with LIMIT), DISTINCT ON, a window's PARTITION BY or ORDER BY, at any
# level (subqueries, sublinks, CTEs, LATERAL, views, set operations), lets a caller learn it: 403
# mask_predicate naming the column. set_policy(p, mask_predicates => 'allow') opts out, and the
# output stays masked; 'refuse' brings the refusal back on the next call. Every call is also sent
# as POST /sql with the query's text, by a twin of its policy with the same rules, granted ad-hoc
# SQL (QuerygateTest::both), and answers alike: the same refusal naming the same column, the same
# rows, hashed under the twin's own key.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'mask_predicates');
$qg->sql(q{
	CREATE ROLE gov_reader NOLOGIN;
	CREATE TABLE people (id int PRIMARY KEY, name text, ssn text, salary int, dept text);
	INSERT INTO people VALUES
	  (1, 'Alice', '123-45-6789', 5000, 'eng'),
	  (2, 'Bob', '987-65-4321', 6000, 'eng'),
	  (3, 'Carol', '123-45-6789', 7000, 'ops');
	CREATE VIEW people_v AS SELECT id, ssn AS social, salary AS pay FROM people;
	GRANT SELECT ON people, people_v TO gov_reader;
});
# The hash of a value as the policy that gave an answer makes it (pred, or its twin).
sub hashed { my ($res, $text) = @_; return hmac_of(hash_key($qg, policy => $res->{policy}), $text); }

# name => [sql, parameters, the column the refusal names, rows once predicates are allowed (a sub
# of the answer where they hold hashes)]
my $ssn = qr/public\.people\.ssn\b/;
my $salary = qr/public\.people\.salary\b/;
my @cases = (
	[ where_eq => 'SELECT id FROM people WHERE ssn = :s ORDER BY id', '?s=123-45-6789', $ssn, [ { id => 1 }, { id => 3 } ] ],
	[ where_expression => 'SELECT id FROM people WHERE lower(ssn) LIKE :p ORDER BY id', '?p=987%25', $ssn, [ { id => 2 } ] ],
	[ where_range => 'SELECT id FROM people WHERE salary > :min ORDER BY id', '?min=5500', $salary, [ { id => 2 }, { id => 3 } ] ],
	[ where_case => 'SELECT id FROM people WHERE CASE WHEN salary > 6500 THEN true ELSE false END', '', $salary, [ { id => 3 } ] ],
	[ join_on => 'SELECT a.id, b.id AS other FROM people a JOIN people b ON a.ssn = b.ssn AND a.id < b.id', '', $ssn,
		[ { id => 1, other => 3 } ] ],
	[ join_using => 'SELECT a.id, b.rid FROM people a JOIN (SELECT id AS rid, ssn FROM people) b USING (ssn) WHERE a.id < b.rid', '',
		$ssn, [ { id => 1, rid => 3 } ] ],
	[ group_by => 'SELECT count(*)::int AS n FROM people GROUP BY ssn ORDER BY 1', '', $ssn, [ { n => 1 }, { n => 2 } ] ],
	[ having => 'SELECT dept FROM people GROUP BY dept HAVING max(salary) > :min ORDER BY dept', '?min=6500', $salary,
		[ { dept => 'ops' } ] ],
	[ order_by_limit => 'SELECT id, name FROM people ORDER BY salary DESC LIMIT 1', '', $salary, [ { id => 3, name => 'Carol' } ] ],
	[ order_by => 'SELECT id FROM people ORDER BY ssn DESC, id', '', $ssn, [ { id => 2 }, { id => 1 }, { id => 3 } ] ],
	[ order_by_expression => 'SELECT name FROM people ORDER BY -salary LIMIT 1', '', $salary, [ { name => 'Carol' } ] ],
	[ distinct_on => 'SELECT DISTINCT ON (ssn) id FROM people ORDER BY ssn, id', '', $ssn, [ { id => 1 }, { id => 2 } ] ],
	[ window_partition => 'SELECT id, count(*) OVER (PARTITION BY ssn)::int AS n FROM people ORDER BY id', '', $ssn,
		[ { id => 1, n => 2 }, { id => 2, n => 1 }, { id => 3, n => 2 } ] ],
	[ window_order => 'SELECT id, rank() OVER (ORDER BY salary DESC)::int AS r FROM people ORDER BY id', '', $salary,
		[ { id => 1, r => 3 }, { id => 2, r => 2 }, { id => 3, r => 1 } ] ],
	[ subquery_where => 'SELECT s.id FROM (SELECT id FROM people WHERE salary > 5500) s ORDER BY s.id', '', $salary,
		[ { id => 2 }, { id => 3 } ] ],
	[ subquery_order_limit => 'SELECT s.name FROM (SELECT name FROM people ORDER BY salary LIMIT 1) s', '', $salary,
		[ { name => 'Alice' } ] ],
	[ sublink_exists => 'SELECT id FROM people p WHERE EXISTS (SELECT 1 FROM people q WHERE q.ssn = p.ssn AND q.id <> p.id) ORDER BY id',
		'', $ssn, [ { id => 1 }, { id => 3 } ] ],
	[ sublink_in => 'SELECT id FROM people WHERE id IN (SELECT id FROM people WHERE ssn LIKE \'98%\')', '', $ssn, [ { id => 2 } ] ],
	[ sublink_select_list => 'SELECT id, (SELECT count(*)::int FROM people q WHERE q.salary < p.id * 3000) AS n FROM people p ORDER BY id',
		'', $salary, [ { id => 1, n => 0 }, { id => 2, n => 1 }, { id => 3, n => 3 } ] ],
	[ cte_where => 'WITH c AS (SELECT id FROM people WHERE ssn LIKE :p) SELECT id FROM c ORDER BY id', '?p=123%25', $ssn,
		[ { id => 1 }, { id => 3 } ] ],
	[ cte_order_limit => 'WITH c AS (SELECT id, salary FROM people) SELECT id FROM c ORDER BY salary LIMIT 1', '', $salary,
		[ { id => 1 } ] ],
	[ lateral => 'SELECT p.id, x.n FROM people p CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM people q WHERE q.salary > p.salary) x ORDER BY p.id',
		'', $salary, [ { id => 1, n => 2 }, { id => 2, n => 1 }, { id => 3, n => 0 } ] ],
	[ view_where => 'SELECT id FROM people_v WHERE social = :s ORDER BY id', '?s=987-65-4321', $ssn, [ { id => 2 } ] ],
	[ view_order_limit => 'SELECT id FROM people_v ORDER BY pay DESC LIMIT 1', '', $salary, [ { id => 3 } ] ],
	[ union_order => 'SELECT v FROM (SELECT ssn AS v FROM people WHERE id = 2 UNION SELECT name FROM people WHERE id = 1) u ORDER BY v LIMIT 1',
		'', $ssn, sub { [ { v => hashed($_[0], '987-65-4321') } ] } ],
	[ using_output => 'SELECT ssn FROM people a JOIN (SELECT id AS rid, ssn FROM people) b USING (ssn) WHERE a.id < b.rid', '',
		$ssn, sub { [ { ssn => hashed($_[0], '123-45-6789') } ] } ],
	[ full_join_using => 'SELECT ssn, a.id FROM (SELECT id, ssn FROM people WHERE id = 1) a FULL JOIN (SELECT ssn FROM people WHERE id = 2) b USING (ssn) ORDER BY a.id',
		'', $ssn, sub { [ { ssn => hashed($_[0], '123-45-6789'), id => 1 }, { ssn => hashed($_[0], '987-65-4321'), id => undef } ] } ],
	[ union_branch_where => 'SELECT id FROM people WHERE id = 1 UNION ALL SELECT id FROM people WHERE salary = 7000', '', $salary,
		[ { id => 1 }, { id => 3 } ] ],
);
$qg->sql(join('', map { 'SELECT querygate.save_query(' . sql_quote($_->[0]) . ', ' . sql_quote($_->[1]) . ");\n" } @cases)
	  . q{SELECT querygate.save_query('by_id', 'SELECT id, ssn, salary FROM people WHERE id = :id');
	      SELECT querygate.save_query('masked_out_filtered', 'SELECT id, ssn FROM people WHERE ssn = :s ORDER BY id');});
my @names = ((map { $_->[0] } @cases), 'by_id', 'masked_out_filtered');
my $pred = $qg->access(policy => 'pred', run_as => 'gov_reader', queries => \@names, setup => q{
	SELECT querygate.mask('pred', 'people.ssn', 'hash', force => true);
	SELECT querygate.mask('pred', 'people.salary', 'null', force => true);});
my $clear = $qg->access(policy => 'clear', run_as => 'gov_reader', queries => \@names);
# A policy masking only a column none of the predicates use.
my $other = $qg->access(policy => 'other', run_as => 'gov_reader', queries => \@names,
	setup => q{SELECT querygate.mask('other', 'people.name', 'hash', force => true);});
$qg->adhoc_twin($_, tables => [qw(people people_v)]) for qw(pred clear other);

is($qg->sql(q{SELECT mask_predicates FROM querygate.policies WHERE name = 'pred'}), 'refuse', 'the default is refuse');

# --- a predicate on an unmasked column is fine, and the output is masked
for my $res ($qg->get_both('/q/by_id?id=2', key => $pred))
{
	$qg->expect_rows($res, [ { id => 2, ssn => hashed($res, '987-65-4321'), salary => undef } ],
		'WHERE on an unmasked column');
}

# --- every predicate on a masked column is refused, naming it
for my $c (@cases)
{
	my ($name, $sql, $params, $column) = @$c;
	$qg->expect_error($_, 403, 'mask_predicate', $name, names => $column)
	  for $qg->get_both("/q/$name$params", key => $pred);
}
$qg->expect_error($_, 403, 'mask_predicate', 'a masked column both filtered and returned', names => $ssn)
  for $qg->get_both('/q/masked_out_filtered?s=123-45-6789', key => $pred);

# --- the same queries are fine for a policy that does not mask those columns
for my $c (@cases)
{
	my ($name, $sql, $params, $column, $rows) = @$c;
	next if $name =~ /^(union_order|using_output|full_join_using)$/;    # their rows are hashed under pred only
	$qg->expect_rows($_, $rows, "$name (no masks)") for $qg->get_both("/q/$name$params", key => $clear);
	for my $res ($qg->get_both("/q/$name$params", key => $other))
	{
		my $named = [ map { my %r = %$_; $r{name} = hashed($res, $r{name}) if exists $r{name}; \%r } @$rows ];
		$qg->expect_rows($res, $named, "$name (a policy masking another column: name hashed)");
	}
}

# --- mask_predicates => 'allow': every query runs, and what it returns is still masked
$qg->sql(q{SELECT querygate.set_policy('pred', mask_predicates => 'allow')});
is($qg->sql(q{SELECT mask_predicates FROM querygate.policies WHERE name = 'pred'}), 'allow', 'set_policy stored allow');
for my $c (@cases)
{
	my ($name, $sql, $params, $column, $rows) = @$c;
	for my $res ($qg->get_both("/q/$name$params", key => $pred))
	{
		$qg->expect_rows($res, ref $rows eq 'CODE' ? $rows->($res) : $rows, "$name (mask_predicates allow)");
	}
}
for my $res ($qg->get_both('/q/masked_out_filtered?s=123-45-6789', key => $pred))
{
	my $h = hashed($res, '123-45-6789');
	$qg->expect_rows($res, [ map { { id => $_, ssn => $h } } 1, 3 ],
		'filtered on a masked column (allowed): the column is still hashed');
}

# set_policy without mask_predicates changes nothing.
$qg->sql(q{SELECT querygate.set_policy('pred')});
$qg->expect_rows($_, [ { id => 2 } ], 'set_policy(p) without an argument keeps allow')
  for $qg->get_both('/q/where_eq?s=987-65-4321', key => $pred);

# An invalid mode is refused.
like(sql_error($qg, q{SELECT querygate.set_policy('pred', mask_predicates => 'sometimes')}), qr/^22023 /,
	'set_policy with an unknown mode: 22023');

# --- back to refuse: the next call is refused again
$qg->sql(q{SELECT querygate.set_policy('pred', mask_predicates => 'refuse')});
for my $name (qw(where_eq order_by_limit window_partition cte_where))
{
	my ($c) = grep { $_->[0] eq $name } @cases;
	$qg->expect_error($_, 403, 'mask_predicate', "$name (refuse again)", names => $c->[3])
	  for $qg->get_both("/q/$name$c->[2]", key => $pred);
}

# --- unmasking the column lifts the refusal
$qg->sql(q{SELECT querygate.unmask('pred', 'people.salary')});
$qg->expect_rows($_, [ { id => 3, name => 'Carol' } ], 'ORDER BY salary LIMIT 1 once salary is unmasked')
  for $qg->get_both('/q/order_by_limit', key => $pred);
$qg->expect_error($_, 403, 'mask_predicate', 'WHERE ssn: still refused (ssn still hashed)', names => $ssn)
  for $qg->get_both('/q/where_eq?s=987-65-4321', key => $pred);

is($qg->sql(q{SELECT querygate.explain('pred', 'distinct_on')->'refused'->>'code'}), 'mask_predicate',
	'explain: DISTINCT ON a hashed column is refused');

done_testing();
