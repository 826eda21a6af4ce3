# Masked values cannot be inferred from an answer's shape or content. Each attack below learned
# a masked value before (a status that flips, a row count, the time taken, a hash of a derived
# value, a hash of a guess next to the hidden ones); under a masking policy each is now refused
# before anything runs (403 mask_expression, mask_predicate for what compares rows,
# mask_hash_input for a hashed output a caller's value can reach), whatever the parameters. Columns passed through
# unchanged (the seed benchmark's governed lookup among them) are served, masked, as before; the
# policy's opt-out (mask_predicates => 'allow') serves the derived values masked as a whole.
# Every call is also sent as POST /sql with the query's text, by a twin of its policy with the
# same rules and list, granted ad-hoc SQL (QuerygateTest::both), and answers alike, hashed under
# the twin's own key; by design the timing attack is refused there as function_not_allowed
# (pg_sleep() is a built-in SQL a caller sends may not call), before the masks are asked.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'mask_inference');
$qg->sql(q{
	CREATE ROLE mi_reader NOLOGIN;
	CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84));
	INSERT INTO pgbench_accounts SELECT g, 1, g * 100, '' FROM generate_series(1, 10) g;
	CREATE TABLE pgbench_branches (bid int PRIMARY KEY, bbalance int);
	CREATE TABLE people (id int PRIMARY KEY, ssn text, card text);
	INSERT INTO people VALUES (1, '123-45-6789', '4111111111111111'), (2, '987-65-4321', '5500000000000004');
	CREATE VIEW people_v AS SELECT id, ssn AS s FROM people;
	GRANT SELECT ON pgbench_accounts, pgbench_branches, people, people_v TO mi_reader;
});
my %q = (
	governed => 'SELECT aid, bid, abalance FROM pgbench_accounts WHERE aid = :aid',
	divide => 'SELECT aid, 1000 / (abalance - :x) AS r FROM pgbench_accounts WHERE aid = :aid',
	overflow => 'SELECT aid, abalance * :big AS r FROM pgbench_accounts WHERE aid = :aid',
	regex_rows => 'SELECT id, regexp_matches(ssn, :re) AS m FROM people WHERE id = 1',
	intersect => 'SELECT ssn FROM people INTERSECT SELECT :guess::text',
	distinct => 'SELECT DISTINCT ssn FROM people',
	sleep => 'SELECT aid, CASE WHEN abalance > :x THEN pg_sleep(0.5) END AS z FROM pgbench_accounts WHERE aid = :aid',
	compare => 'SELECT aid, abalance > :x AS b FROM pgbench_accounts WHERE aid = :aid',
	chosen_plaintext => 'SELECT id, substr(ssn, 1, 0) || :guess AS h FROM people WHERE id = 1',
	walk => 'SELECT id, right(card, :n) AS r FROM people WHERE id = 1',
	as_domain => 'SELECT id, \'@\' || ssn AS e FROM people WHERE id = 1',
	plain => 'SELECT id, ssn, card FROM people ORDER BY id',
	through_view => 'SELECT id, s FROM people_v ORDER BY id',
	through_cte => 'WITH c AS (SELECT id, ssn FROM people) SELECT id, ssn FROM c ORDER BY id',
	union_all => 'SELECT id, ssn FROM people WHERE id = 1 UNION ALL SELECT id, ssn FROM people WHERE id = 2',
	counted => 'SELECT count(ssn)::int AS n FROM people WHERE id <= :n',
	guess_merged => 'SELECT ssn FROM people WHERE id = :id UNION ALL SELECT unnest(string_to_array(:g, \',\'))',
);
$qg->sql(join('', map { 'SELECT querygate.save_query(' . sql_quote($_) . ', ' . sql_quote($q{$_}) . ");\n" } sort keys %q));
my @all = sort keys %q;
# Granted before the masks are set: what is tested here is the workers' refusal.
my $key = $qg->access(policy => 'governed', run_as => 'mi_reader', queries => \@all,
	setup => q{SELECT querygate.allow_tables('governed', ARRAY['pgbench_accounts', 'pgbench_branches', 'people', 'people_v']::regclass[]);
	           SELECT querygate.mask('governed', '*.abalance', 'hash', force => true);
	           SELECT querygate.mask('governed', 'people.ssn', 'hash', force => true);
	           SELECT querygate.mask('governed', 'people.card', 'mask', force => true);});
my $open = $qg->access(policy => 'open', run_as => 'mi_reader', queries => \@all);
$qg->adhoc_twin($_, tables => [qw(pgbench_accounts pgbench_branches people people_v)]) for qw(governed open);
# Both paths' answers to a call of a saved query (QuerygateTest::both).
sub call { my ($k, $name, %p) = @_; return $qg->get_both("/q/$name" . query_string(%p), key => $k); }
# The hash of a value as the policy that gave an answer makes it (governed, or its twin).
sub hashed { my ($res, $text) = @_; return hmac_of(hash_key($qg, policy => $res->{policy}), $text); }

# What each attack learns without masks, so the refusals below are the masks' doing.
is($_->{status}, 500, on_path($_, 'without masks: 1000 / (abalance - 300) fails for abalance 300'))
  for call($open, 'divide', aid => 3, x => 300);
is($_->{status}, 200, on_path($_, 'and answers for any other guess')) for call($open, 'divide', aid => 3, x => 299);

# --- every attack, several parameters each: refused, with one answer that does not depend on them
my @attacks = (
	[ divide => 'mask_expression', [ aid => 3, x => 300 ], [ aid => 3, x => 299 ] ],
	[ overflow => 'mask_expression', [ aid => 3, big => 2147483647 ], [ aid => 3, big => 1 ] ],
	[ regex_rows => 'mask_expression', [ re => '^123' ], [ re => '^999' ] ],
	[ intersect => 'mask_predicate', [ guess => '123-45-6789' ], [ guess => 'nope' ] ],
	[ distinct => 'mask_predicate' ],
	[ sleep => 'mask_expression', [ aid => 3, x => 0 ], [ aid => 3, x => 1000 ] ],
	[ compare => 'mask_expression', [ aid => 3, x => 299 ], [ aid => 3, x => 301 ] ],
	[ chosen_plaintext => 'mask_expression', [ guess => '123-45-6789' ], [ guess => 'x' ] ],
	[ walk => 'mask_expression', [ n => 1 ], [ n => 16 ] ],
	[ as_domain => 'mask_expression' ],
	# a hashed output that can carry a value the caller picks: the guesses, or a count a filter steers
	[ guess_merged => 'mask_hash_input', [ id => 1, g => '123-45-6789,x' ], [ id => 1, g => 'y' ] ],
	[ counted => 'mask_hash_input', [ n => 1 ], [ n => 2 ] ],
);
# Through POST /sql, pg_sleep() is refused before the masks are asked.
my %adhoc = (sleep => [ 403, 'function_not_allowed', names => qr/pg_sleep\(\)/ ]);
for my $a (@attacks)
{
	my ($name, $code, @variants) = @$a;
	@variants = ([]) unless @variants;
	my %bodies;
	for my $v (@variants)
	{
		for my $res (call($key, $name, @$v))
		{
			$qg->expect_error($res, 403, $code, "$name (@$v)",
				names => $code eq 'mask_hash_input' ? qr/is hashed and can carry/ : qr/masked column/,
				$adhoc{$name} ? (sql => $adhoc{$name}) : ());
			ok($res->{took} < 0.4, on_path($res, "$name (@$v): refused before anything ran ($res->{took}s)"));
			$bodies{ $res->{via} }{ body_without_request_id($res) }++;
		}
	}
	is(scalar(keys %{ $bodies{$_} }), 1, on_path({ via => $_ }, "$name: the same refusal whatever the parameters"))
	  for qw(/q /sql);
}

# --- passed through unchanged: served and masked
for my $c (
	[ [ governed => aid => 3 ], sub { [ { aid => 3, bid => 1, abalance => hashed($_[0], '300') } ] },
		'the seed benchmark\'s governed lookup: served, abalance hashed' ],
	[ ['plain'], sub { [ { id => 1, ssn => $_[1], card => '4***' }, { id => 2, ssn => $_[2], card => '5***' } ] },
		'plain columns: hashed and masked' ],
	[ ['through_view'], sub { [ { id => 1, s => $_[1] }, { id => 2, s => $_[2] } ] }, 'through a view' ],
	[ ['through_cte'], sub { [ { id => 1, ssn => $_[1] }, { id => 2, ssn => $_[2] } ] }, 'through a CTE' ],
	[ ['union_all'], sub { [ { id => 1, ssn => $_[1] }, { id => 2, ssn => $_[2] } ] }, 'through UNION ALL' ])
{
	my ($args, $rows, $what) = @$c;
	for my $res (call($key, @$args))
	{
		$qg->expect_rows($res, $rows->($res, hashed($res, '123-45-6789'), hashed($res, '987-65-4321')), $what);
	}
}

# --- grant_query refuses what every call would refuse
like(sql_error($qg, q{SELECT querygate.grant_query('governed', 'compare')}),
	qr/^42501 policy "governed" would refuse saved query "compare": the query computes with the masked column public\.pgbench_accounts\.abalance \(operator >\)/,
	'grant_query of an attack: 42501, naming the column and the use');

# --- the opt-out: derived values come back masked as a whole
$qg->sql(q{SELECT querygate.set_policy('governed', mask_predicates => 'allow')});
for my $res (call($key, 'compare', aid => 3, x => 299))
{
	$qg->expect_rows($res, [ { aid => 3, b => hashed($res, 't') } ],
		'opted out: abalance > :x is served, hashed (and the hash is one of two values: why the default refuses)');
}
$qg->sql(q{SELECT querygate.set_policy('governed', mask_predicates => 'refuse')});
$qg->expect_error($_, 403, 'mask_expression', 'and refused again') for call($key, 'compare', aid => 3, x => 299);

done_testing();
