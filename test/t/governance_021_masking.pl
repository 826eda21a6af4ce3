# Column masking by lineage (querygate.mask / unmask). Every expected row is built in Perl from
# the values PostgreSQL itself gives the unmasked columns (read as superuser), with the HMAC-SHA-256
# of the hash action computed here from the secret in querygate.mask_secret. The leaks people try:
# expressions, casts, concatenation, aggregates, window functions, CASE, JSON builders, whole-row
# references, SELECT *, set operations, subqueries, CTEs, views, functions in FROM. Under a masking
# policy a masked value comes back only unchanged: each case is either served masked (a column
# passed through views, subqueries, CTEs, UNION ALL, count()) or refused (403 mask_expression for a
# value computed with, mask_predicate for DISTINCT-like comparisons); under a policy that opts out
# (mask_predicates => 'allow') a derived column is masked as a whole. The actions: hash (64 hex
# digits; equal inputs, equal hashes; the same on every call and every worker), mask, null, drop;
# the strictest rule wins; a function whose rows cannot be traced is refused with
# mask_unresolvable; rule changes apply to the next call. Every call is also sent as POST /sql with
# the query's text, by a twin of its policy with the same rules, granted ad-hoc SQL with a list
# of the three relations (QuerygateTest::both), and answers alike, hashed under the twin's own
# key; by design it differs where a function is not built-in (refused as a name,
# name_not_allowed, for it can read any table) and where a built-in reads the server's state
# (pg_backend_pid(): function_not_allowed).
use strict;
use warnings;
use utf8;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

# The worker runs its reads (querygate.slow_call_threshold = 0): a slow one holds it, which is
# what this test needs; slow reads in helpers: limits_073_slow_calls.pl.
my $qg = QuerygateTest->start(name => 'masking', workers => 2, conf => "querygate.slow_call_threshold = 0\n");
my $utf8 = $qg->sql('SHOW server_encoding') eq 'UTF8';
my $city2 = $utf8 ? 'Ålesund' : 'Bergen';
$qg->sql(qq{
	CREATE ROLE gov_reader NOLOGIN;
	CREATE TABLE people (id int PRIMARY KEY, name text, email text, ssn text, salary int, age int,
	                     city text, dept text, note text);
	INSERT INTO people VALUES
	  (1, 'Alice', 'alice\@example.com', '123-45-6789', 5000, 30, 'Oslo', 'eng', 'n1'),
	  (2, 'Bob', 'bob.smith\@corp.example.org', '987-65-4321', 6000, 40, '$city2', 'eng', 'n2'),
	  (3, 'Carol', 'carol\@example.com', '123-45-6789', 7000, 50, NULL, 'ops', 'n3');
	CREATE VIEW people_v AS SELECT id, ssn AS social, email AS contact, salary * 12 AS yearly FROM people;
	CREATE VIEW people_vv AS SELECT id, social AS s2, contact AS c2 FROM people_v;
	CREATE FUNCTION opaque_people() RETURNS TABLE (name text, ssn text) LANGUAGE sql STABLE
	  AS 'SELECT name, ssn FROM people ORDER BY id';
	CREATE FUNCTION person_row(int) RETURNS people LANGUAGE sql STABLE
	  AS 'SELECT * FROM people WHERE id = \$1';
	CREATE FUNCTION get_ssn(int) RETURNS text LANGUAGE sql STABLE
	  AS 'SELECT ssn FROM people WHERE id = \$1';
	GRANT SELECT ON people, people_v, people_vv TO gov_reader;
	GRANT EXECUTE ON FUNCTION opaque_people(), person_row(int), get_ssn(int) TO gov_reader;
});
my $secret = mask_secret($qg);
is(length $secret, 32, 'the mask secret is 32 bytes');

# Column kinds of the expected rows: int and text are plain values; hash, mask, mask_nontext
# (the mask action on a non-text value: null), null and drop are the actions.
sub expected
{
	my ($sql, $policy, @spec) = @_;
	my $hkey = hash_key($qg, policy => $policy);
	my @rows;
	my @cols = map { $spec[ 2 * $_ ] } 0 .. $#spec / 2;
	my $all = column_texts($qg, $sql, @cols);
	while (@spec)
	{
		my ($col, $kind) = splice(@spec, 0, 2);
		my $vals = $all->{$col};
		for my $i (0 .. $#$vals)
		{
			my $v = $vals->[$i];
			$rows[$i] //= {};
			next if $kind eq 'drop';
			$rows[$i]{$col} =
				$kind eq 'int' ? (defined $v ? 0 + $v : undef)
			  : $kind eq 'text' ? $v
			  : $kind eq 'hash' ? hmac_of($hkey, $v)
			  : $kind eq 'mask' ? masked_text($v)
			  : undef;    # null, mask_nontext
		}
	}
	return \@rows;
}

# name => [sql, policy, spec...]: spec is what the opt-out policy (derived from policy) answers;
# %strict below says what policy itself does with it.
my @cases = (
	[ plain => 'SELECT id, name, email, ssn, salary, age, city, dept, note FROM people ORDER BY id', 'masked',
		id => 'int', name => 'text', email => 'mask', ssn => 'hash', salary => 'null', age => 'mask_nontext',
		city => 'mask', dept => 'text', note => 'drop' ],
	[ star => 'SELECT * FROM people ORDER BY id', 'masked',
		id => 'int', name => 'text', email => 'mask', ssn => 'hash', salary => 'null', age => 'mask_nontext',
		city => 'mask', dept => 'text', note => 'drop' ],
	[ table_star => 'SELECT p.* FROM people p ORDER BY p.id', 'masked',
		id => 'int', name => 'text', email => 'mask', ssn => 'hash', salary => 'null', age => 'mask_nontext',
		city => 'mask', dept => 'text', note => 'drop' ],
	[ expressions => 'SELECT id, lower(ssn) AS a, upper(email) AS b, salary + 1 AS c, length(city) AS d, trim(note) AS e, replace(ssn, \'-\', \'\') AS f, -salary AS g FROM people ORDER BY id',
		'masked', id => 'int', a => 'hash', b => 'mask', c => 'null', d => 'mask_nontext', e => 'drop', f => 'hash',
		g => 'null' ],
	[ casts => 'SELECT id, ssn::varchar(20) AS a, salary::text AS b, age::numeric AS c, email::bytea AS d, CAST(ssn AS char(11)) AS e FROM people ORDER BY id',
		'masked', id => 'int', a => 'hash', b => 'null', c => 'mask_nontext', d => 'mask_nontext', e => 'hash' ],
	[ concatenation => 'SELECT id, name || \':\' || ssn AS a, ssn || email AS b, concat(name, salary) AS c, format(\'%s/%s\', dept, note) AS d, concat_ws(\',\', name, city) AS e FROM people ORDER BY id',
		'masked', id => 'int', a => 'hash', b => 'mask', c => 'null', d => 'drop', e => 'mask' ],
	[ aggregates => 'SELECT dept, count(ssn) AS a, max(salary) AS b, string_agg(email, \',\' ORDER BY id) AS c, array_agg(ssn ORDER BY id) AS d, min(age) AS e, count(*)::int AS n, sum(length(ssn)) AS f FROM people GROUP BY dept ORDER BY dept',
		'masked', dept => 'text', a => 'hash', b => 'null', c => 'mask', d => 'hash', e => 'mask_nontext', n => 'int',
		f => 'hash' ],
	[ aggregate_no_group => 'SELECT count(DISTINCT ssn) AS a, avg(salary) AS b, json_agg(ssn ORDER BY id) AS c, json_object_agg(name, ssn ORDER BY id) AS d, array_to_string(array_agg(ssn ORDER BY id), \';\') AS e FROM people',
		'masked', a => 'hash', b => 'null', c => 'hash', d => 'hash', e => 'hash' ],
	[ rows_and_arrays => 'SELECT id, ROW(id, ssn)::text AS a, ARRAY[name, ssn] AS b, (ARRAY[ssn, name])[1] AS c, (SELECT p2 FROM people p2 WHERE p2.id = p.id)::text AS d FROM people p ORDER BY id',
		'masked', id => 'int', a => 'hash', b => 'hash', c => 'hash', d => 'drop' ],
	[ whole_row_view => 'SELECT v AS r FROM people_v v ORDER BY v.id', 'hashed', r => 'hash' ],
	[ windows => 'SELECT id, sum(salary) OVER () AS a, lag(email) OVER (ORDER BY id) AS b, first_value(ssn) OVER (ORDER BY id) AS c, row_number() OVER (ORDER BY id) AS r, count(note) OVER () AS d FROM people ORDER BY id',
		'masked', id => 'int', a => 'null', b => 'mask', c => 'hash', r => 'int', d => 'drop' ],
	[ case_exprs => 'SELECT id, CASE WHEN salary > 5500 THEN \'high\' ELSE \'low\' END AS band, CASE WHEN id = 1 THEN ssn ELSE name END AS mixed, CASE email WHEN \'x\' THEN 1 ELSE 0 END AS z, coalesce(city, name) AS c, nullif(ssn, \'\') AS n, greatest(ssn, name) AS g FROM people ORDER BY id',
		'masked', id => 'int', band => 'null', mixed => 'hash', z => 'mask_nontext', c => 'mask', n => 'hash',
		g => 'hash' ],
	[ json_builders => 'SELECT id, json_build_object(\'s\', ssn) AS a, jsonb_build_object(\'e\', email) AS b, to_jsonb(ssn) AS c, json_build_array(name, ssn) AS d, to_json(salary) AS e, jsonb_build_object(\'n\', note) AS f, json_object(ARRAY[\'k\', ssn]) AS g FROM people ORDER BY id',
		'masked', id => 'int', a => 'hash', b => 'mask_nontext', c => 'hash', d => 'hash', e => 'null', f => 'drop',
		g => 'hash' ],
	[ whole_row_dropped => 'SELECT id, row_to_json(p) AS a, to_jsonb(p) AS b, p AS c, (p).ssn AS d, json_build_object(\'p\', p) AS e FROM people p ORDER BY id',
		'masked', id => 'int', a => 'drop', b => 'drop', c => 'drop', d => 'hash', e => 'drop' ],
	[ whole_row_hashed => 'SELECT id, row_to_json(p) AS a, to_jsonb(p) AS b, p AS c, p::text AS d FROM people p ORDER BY id',
		'hashed', id => 'int', a => 'hash', b => 'hash', c => 'hash', d => 'hash' ],
	[ whole_row_subquery => 'SELECT t AS r, row_to_json(t) AS j FROM (SELECT id, name, ssn FROM people) t ORDER BY t.id',
		'hashed', r => 'hash', j => 'hash' ],
	[ whole_row_unmasked_part => 'SELECT t AS r FROM (SELECT id, name FROM people) t ORDER BY t.id', 'hashed', r => 'text' ],
	[ union_one_side => 'SELECT id, name AS v FROM people WHERE id = 1 UNION ALL SELECT id, ssn FROM people WHERE id = 2 ORDER BY id',
		'masked', id => 'int', v => 'hash' ],
	[ union_strictest => 'SELECT 1 AS k, email AS v FROM people WHERE id = 1 UNION ALL SELECT 2, salary::text FROM people WHERE id = 2 UNION ALL SELECT 3, name FROM people WHERE id = 3 ORDER BY k',
		'masked', k => 'int', v => 'null' ],
	[ union_in_subquery => 'SELECT u.v FROM (SELECT ssn AS v FROM people WHERE id = 1 UNION SELECT name FROM people WHERE id = 99) u',
		'masked', v => 'hash' ],
	[ subqueries => 'SELECT p.id, (SELECT q.ssn FROM people q WHERE q.id = p.id) AS a, (SELECT max(salary) FROM people) AS b, x.e AS c, ARRAY(SELECT ssn FROM people ORDER BY id) AS d FROM people p JOIN (SELECT id AS xid, email AS e FROM people) x ON x.xid = p.id ORDER BY p.id',
		'masked', id => 'int', a => 'hash', b => 'null', c => 'mask', d => 'hash' ],
	[ ctes => 'WITH c AS (SELECT id, ssn AS s, salary * 2 AS d, email AS e FROM people), c2 AS (SELECT id, s || \'!\' AS s2 FROM c) SELECT c.id, s, d, e, s2 FROM c JOIN c2 USING (id) ORDER BY c.id',
		'masked', id => 'int', s => 'hash', d => 'null', e => 'mask', s2 => 'hash' ],
	[ recursive_cte => 'WITH RECURSIVE r(n, s) AS (SELECT 1, ssn FROM people WHERE id = 1 UNION ALL SELECT n + 1, s || \'+\' FROM r WHERE n < 3) SELECT n, s FROM r ORDER BY n',
		'masked', n => 'int', s => 'hash' ],
	[ views => 'SELECT id, social, contact, yearly FROM people_v ORDER BY id', 'masked',
		id => 'int', social => 'hash', contact => 'mask', yearly => 'null' ],
	[ view_of_view => 'SELECT id, s2, c2 FROM people_vv ORDER BY id', 'masked', id => 'int', s2 => 'hash', c2 => 'mask' ],
	[ values_list => 'SELECT v.x FROM (VALUES (\'a\'), ((SELECT ssn FROM people WHERE id = 2))) AS v(x)', 'masked',
		x => 'hash' ],
);

$qg->sql(join('', map { 'SELECT querygate.save_query(' . sql_quote($_->[0]) . ', ' . sql_quote($_->[1]) . ");\n" } @cases));
$qg->sql(q{
	SELECT querygate.save_query('opaque_from', 'SELECT name, ssn FROM opaque_people()');
	SELECT querygate.save_query('opaque_star', 'SELECT * FROM opaque_people()');
	SELECT querygate.save_query('opaque_record', 'SELECT (person_row(1)).ssn AS s');
	SELECT querygate.save_query('opaque_in_subquery', 'SELECT x.n FROM (SELECT name AS n FROM opaque_people()) x');
	SELECT querygate.save_query('opaque_scalar', 'SELECT get_ssn(1) AS s');
	SELECT querygate.save_query('transparent_function', 'SELECT v FROM unnest((SELECT array_agg(ssn ORDER BY id) FROM people)) AS v');
	SELECT querygate.save_query('lateral_unnest', 'SELECT p.id, t.v FROM people p CROSS JOIN LATERAL unnest(ARRAY[p.ssn, p.ssn || ''x'']) AS t(v) ORDER BY p.id');
	SELECT querygate.save_query('hash_pid', 'SELECT pg_backend_pid() AS pid, ssn, pg_sleep(:sleep)::text AS z FROM people WHERE id = 1');
	SELECT querygate.save_query('names', 'SELECT id, name, dept FROM people ORDER BY id');
});
my @names = ((map { $_->[0] } @cases),
	qw(opaque_from opaque_star opaque_record opaque_in_subquery opaque_scalar transparent_function lateral_unnest hash_pid names));
my %key;
$key{$_} = $qg->access(policy => $_, run_as => 'gov_reader', queries => \@names)
  for qw(masked hashed plain derived derived_hashed);
# derived and derived_hashed: the same rules, and the opt-out.
$qg->sql(join('', map { my $p = $_; map { "SELECT querygate.mask('$p', $_, force => true);\n" }
		q{'people.ssn', 'hash'}, q{'people.email', 'mask'}, q{'people.city', 'mask'},
		q{'people.age', 'mask'}, q{'people.salary', 'null'}, q{'people.note', 'drop'} } qw(masked derived))
	. q{
	SELECT querygate.mask('hashed', 'public.people.ssn', 'hash', force => true);
	SELECT querygate.mask('derived_hashed', 'public.people.ssn', 'hash', force => true);
	SELECT querygate.set_policy('derived', mask_predicates => 'allow');
	SELECT querygate.set_policy('derived_hashed', mask_predicates => 'allow');
});
my %derived = (masked => 'derived', hashed => 'derived_hashed');
$qg->adhoc_twin($_, tables => [qw(people people_v people_vv)]) for sort keys %key;

# What the default policy does with each case: served (the opt-out's rows), or refused with a code.
my %strict = (
	plain => 'served', star => 'served', table_star => 'served', whole_row_view => 'served',
	whole_row_unmasked_part => 'served', view_of_view => 'served',
	union_in_subquery => 'mask_predicate',
	# a hashed output that a value of name, or the constant 'a', can reach would hash it
	union_one_side => 'mask_hash_input', values_list => 'mask_hash_input',
	map { $_ => 'mask_expression' } qw(expressions casts concatenation aggregates aggregate_no_group
	  rows_and_arrays windows case_exprs json_builders whole_row_dropped whole_row_hashed
	  whole_row_subquery union_strictest subqueries ctes recursive_cte views),
);
is(scalar(keys %strict), scalar(@cases), 'every case says what the default policy does');

# --- every case against rows computed independently
for my $c (@cases)
{
	my ($name, $sql, $policy, @spec) = @$c;
	for my $res ($qg->get_both("/q/$name", key => $key{ $derived{$policy} }))
	{
		$qg->expect_rows($res, expected($sql, $res->{policy}, @spec), "$name ($derived{$policy}, opted out)");
	}
	for my $res ($qg->get_both("/q/$name", key => $key{$policy}))
	{
		if (($strict{$name} // '') eq 'served')
		{
			$qg->expect_rows($res, expected($sql, $res->{policy}, @spec), "$name ($policy)");
		}
		else
		{
			$qg->expect_error($res, 403, $strict{$name} // 'undeclared', "$name ($policy)",
				names => ($strict{$name} // '') eq 'mask_hash_input' ? qr/column "[vx]" is hashed and can carry/
				: qr/masked column public\.people\./);
		}
	}
}

# The same queries under a policy without masks return the clear values (the masking above is
# the policy's doing).
for my $res ($qg->get_both('/q/plain', key => $key{plain}))
{
	is($res->{json}[0]{ssn} // '', '123-45-6789', on_path($res, 'a policy without masks sees the clear ssn'))
	  or diag(QuerygateTest::describe($res));
}

# --- the actions, spelled out, on each path
# Each path's answer to /q/plain under masked, and the ssn of each of its rows.
my (%plain, %hashes);
for my $res ($qg->get_both('/q/plain', key => $key{masked}))
{
	my $rows = ref $res->{json} eq 'ARRAY' ? $res->{json} : [];
	my @hashes = map { $_->{ssn} } @$rows;
	($plain{ $res->{via} }, $hashes{ $res->{via} }) = ($res, \@hashes);
	is(scalar(grep { defined && /^[0-9a-f]{64}$/ } @hashes), 3, on_path($res, 'hash: 64 lower-case hex digits'))
	  or diag(explain \@hashes);
	is($hashes[0], $hashes[2], on_path($res, 'hash: equal values (rows 1 and 3) give equal hashes'));
	isnt($hashes[0], $hashes[1], on_path($res, 'hash: different values give different hashes'));
	is($hashes[0], hmac_of(hash_key($qg, policy => $res->{policy}), '123-45-6789'),
		on_path($res, 'hash: HMAC-SHA-256 of the value\'s text with the policy\'s key (derived from the mask secret)'));
	is_deeply([ map { $_->{email} } @$rows ], [ 'a***', 'b***', 'c***' ],
		on_path($res, 'mask: an e-mail address keeps its first character only (mask_email keeps a domain: 069)'));
	is_deeply([ map { $_->{city} } @$rows ], [ 'O***', ($utf8 ? 'Å***' : 'B***'), undef ],
		on_path($res, 'mask: text keeps its first character (a whole character), NULL stays null'));
	is_deeply([ map { exists $_->{age} ? $_->{age} : 'absent' } @$rows ], [ undef, undef, undef ],
		on_path($res, 'mask: a non-text column becomes null'));
	is_deeply([ map { exists $_->{salary} ? $_->{salary} : 'absent' } @$rows ], [ undef, undef, undef ],
		on_path($res, 'null: the value is null'));
	is(scalar(grep { exists $_->{note} } @$rows), 0, on_path($res, 'drop: the key is absent from every row object'));
	like($res->{content}, qr/^\[\{"id":1,"name":"Alice","email":"a\*\*\*","ssn":"[0-9a-f]{64}","salary":null,"age":null,"city":"O\*\*\*","dept":"eng"\},/,
		on_path($res, 'the row text: dropped column absent, column order kept'));
}
isnt($hashes{'/sql'}[0], $hashes{'/q'}[0], 'hash: the twin\'s hash differs from its policy\'s (each policy its own key)');
$qg->expect_rows($_, [ $plain{ $_->{via} }{json}[1] ], 'page 2 (read through a cursor) is masked like page 1')
  for $qg->get_both('/q/plain?page=2&page_size=1', key => $key{masked});
is($_->{content}, $plain{ $_->{via} }{content}, on_path($_, 'hash: the same on the next call'))
  for $qg->get_both('/q/plain', key => $key{masked});
for my $res ($qg->get_both('/q/plain', key => $key{hashed}))
{
	my $other_policy = $res->{json}[1]{ssn} // '';
	isnt($other_policy, $hashes{ $res->{via} }[1], on_path($res, 'hash: another policy\'s hash of the same value differs (its own scope)'));
	is($other_policy, hmac_of(hash_key($qg, policy => $res->{policy}), '987-65-4321'),
		on_path($res, 'hash: under that policy\'s own key'));
}
$qg->sql(q{SELECT querygate.set_policy('masked', hash_scope => 'people_join');
           SELECT querygate.set_policy('hashed', hash_scope => 'people_join');});
my @shared;
for my $p (qw(hashed masked))
{
	push @shared, map { $_->{json}[1]{ssn} } $qg->get_both('/q/plain', key => $key{$p});
}
is_deeply(\@shared, [ (hmac_of(hash_key($qg, scope => 'people_join'), '987-65-4321')) x 4 ],
	'hash: two policies that name one shared scope, and their twins, hash alike, under the scope\'s key');
$qg->sql(q{SELECT querygate.set_policy('masked', hash_scope => '');
           SELECT querygate.set_policy('hashed', hash_scope => '');});
is($_->{json}[0]{ssn}, $hashes{ $_->{via} }[0], on_path($_, 'hash: hash_scope \'\' is the policy\'s own again'))
  for $qg->get_both('/q/plain', key => $key{masked});

# Across workers: a slow call holds one worker; the other answers a second call meanwhile.
{
	my $slow = start_request($qg, '/q/hash_pid?sleep=3', 'X-API-Key' => $key{masked});
	ok( poll_until(
			sub {
				$qg->sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'querygate http worker' AND state = 'active' AND query LIKE '%pg_sleep%'})
				  eq '1';
			}),
		'a worker is running the slow call');
	my $quick = fresh_request($qg, 'GET', '/q/hash_pid?sleep=0', key => $key{masked});
	my $first = finish_request($slow);
	is($first->{status}, 200, 'the slow call answered 200') or diag($first->{body});
	is($quick->{status}, 200, 'the call made meanwhile answered 200') or diag(QuerygateTest::describe($quick));
	my ($a, $b) = ($first->{json}[0] // {}, $quick->{json}[0] // {});
	isnt($a->{pid} // 0, $b->{pid} // 0, 'the two calls ran on two different workers');
	is($a->{ssn} // 'a', $b->{ssn} // 'b', 'hash: the same on both workers');
	is($a->{ssn} // '', hmac_of(hash_key($qg, policy => 'masked'), '123-45-6789'), 'hash: and equal to the independent HMAC');
	# Through POST /sql the same statement reads the server's state: refused.
	my (undef, $adhoc) = $qg->get_both('/q/hash_pid?sleep=0', key => $key{masked});
	$qg->expect_error($adhoc, 403, 'function_not_allowed', 'hash_pid', names => qr/pg_backend_pid\(\)/);
}

# --- the strictest rule wins; each change applies to the next call
my @steps = (
	[ q{SELECT querygate.mask('masked', 'people.dept', 'hash', force => true)}, 'hash', 'dept hashed' ],
	[ q{SELECT querygate.mask('masked', '*.DEPT', 'mask', force => true)}, 'mask', 'hash and mask (a case-insensitive pattern): mask wins' ],
	[ q{SELECT querygate.mask('masked', 'public.people.dep*', 'null', force => true)}, 'null', 'and null: null wins' ],
	[ q{SELECT querygate.mask('masked', '*.*.d*t', 'drop', force => true)}, 'drop', 'and drop: drop wins' ],
	[ q{SELECT querygate.mask('masked', 'people.dept', 'hash', force => true)}, 'drop', 'mask() again with a weaker action: drop still wins' ],
	[ q{SELECT querygate.unmask('masked', '*.*.d*t')}, 'null', 'drop removed: null' ],
	[ q{SELECT querygate.unmask('masked', 'public.people.dep*')}, 'mask', 'null removed: mask' ],
	[ q{SELECT querygate.unmask('masked', '*.dept')}, 'hash', 'mask removed (pattern in another case): hash' ],
	[ q{SELECT querygate.unmask('masked', 'people.dept')}, 'text', 'every rule removed: the clear value' ],
);
for my $s (@steps)
{
	my ($sql, $kind, $name) = @$s;
	$qg->sql($sql);
	for my $res ($qg->get_both('/q/names', key => $key{masked}))
	{
		$qg->expect_rows($res,
			expected('SELECT id, name, dept FROM people ORDER BY id', $res->{policy}, id => 'int', name => 'text', dept => $kind),
			"strictest rule: $name");
	}
}
# Two rules on one derived column (opted out): the strictest of its sources.
is($_->{json}[0]{b} // '', '1***', on_path($_, 'ssn || email: hash and mask sources, mask wins'))
  for $qg->get_both('/q/concatenation', key => $key{derived});

# --- a rule change applies to the next call
$qg->sql(q{SELECT querygate.unmask('derived', 'people.ssn')});
for my $res ($qg->get_both('/q/views', key => $key{derived}))
{
	is($res->{json}[0]{social} // '', '123-45-6789', on_path($res, 'unmask: the next call sees the clear value (through a view)'))
	  or diag(QuerygateTest::describe($res));
}
$qg->sql(q{SELECT querygate.mask('derived', 'people.ssn', 'hash', force => true)});
for my $res ($qg->get_both('/q/views', key => $key{derived}))
{
	is($res->{json}[0]{social} // '', hmac_of(hash_key($qg, policy => $res->{policy}), '123-45-6789'),
		on_path($res, 'mask again: the next call is hashed'));
}
$qg->sql(q{BEGIN; SELECT querygate.unmask('derived', 'people.ssn'); ROLLBACK;});
for my $res ($qg->get_both('/q/views', key => $key{derived}))
{
	is($res->{json}[0]{social} // '', hmac_of(hash_key($qg, policy => $res->{policy}), '123-45-6789'),
		on_path($res, 'a rolled-back unmask changes nothing'));
}

# --- a function in FROM, or a record from an opaque function: refused under any mask rule
# The message names the first output column whose sources cannot be known. Through POST /sql a
# function that is not built-in is refused first, masks or none, as a name (one that does not
# exist is answered alike).
my $refused_name = qr/or function that does not exist or that this caller's policy may not use/;
my @reads_a_table = (sql => [ 403, 'name_not_allowed', names => $refused_name ]);
my %first_unresolvable = (opaque_from => 'name', opaque_star => 'name', opaque_record => 's', opaque_in_subquery => 'n');
for my $q (qw(opaque_from opaque_star opaque_record opaque_in_subquery))
{
	$qg->expect_error($_, 403, 'mask_unresolvable', "$q (policy masking ssn)",
		names => qr/the sources of column "\Q$first_unresolvable{$q}\E" cannot be known/, @reads_a_table)
	  for $qg->get_both("/q/$q", key => $key{masked});
	$qg->expect_error($_, 403, 'mask_unresolvable', "$q (policy with one hash rule)", @reads_a_table)
	  for $qg->get_both("/q/$q", key => $key{hashed});
	my ($saved, $adhoc) = $qg->get_both("/q/$q", key => $key{plain});
	is($saved->{status}, 200, "$q: 200 for a policy without mask rules") or diag(QuerygateTest::describe($saved));
	$qg->expect_error($adhoc, 403, 'name_not_allowed', "$q (policy without mask rules)", names => $refused_name);
}
# A scalar user-defined function reads a masked column inside its body: its result's sources cannot
# be known from the query, so it must not be served as it is (refused, or masked).
for my $res ($qg->get_both('/q/opaque_scalar', key => $key{masked}))
{
	$qg->expect_error($res, 403, 'mask_unresolvable', 'a scalar user-defined function under mask rules is refused',
		@reads_a_table);
	unlike($res->{content} // '', qr/123-45-6789/, on_path($res, 'and its value is not in the answer'));
}

# The arguments of a function in FROM decide how many rows it makes (unnest of a masked array, of
# string_to_array(ssn, ...)), so they count as predicates, and its rows are computed from them:
# refused unless the policy opts out, and then the values still come back masked.
for my $q (qw(transparent_function lateral_unnest))
{
	$qg->expect_error($_, 403, 'mask_expression', "$q: a masked column in a FROM function's arguments",
		names => qr/public\.people\.ssn \(unnest\(\)\)/)
	  for $qg->get_both("/q/$q", key => $key{masked});
}
$qg->sql(q{SELECT querygate.set_policy('masked', mask_predicates => 'allow')});
for my $res ($qg->get_both('/q/transparent_function', key => $key{masked}))
{
	$qg->expect_rows($res,
		expected('SELECT v FROM unnest((SELECT array_agg(ssn ORDER BY id) FROM people)) AS v', $res->{policy}, v => 'hash'),
		'transparent_function with predicates allowed: hashed');
}
for my $res ($qg->get_both('/q/lateral_unnest', key => $key{masked}))
{
	$qg->expect_rows($res,
		expected(q{SELECT p.id, t.v FROM people p CROSS JOIN LATERAL unnest(ARRAY[p.ssn, p.ssn || 'x']) AS t(v) ORDER BY p.id},
			$res->{policy}, id => 'int', v => 'hash'),
		'lateral_unnest with predicates allowed: hashed');
}
$qg->sql(q{SELECT querygate.set_policy('masked', mask_predicates => 'refuse')});
for my $res ($qg->get_both('/q/opaque_scalar', key => $key{plain}))
{
	if ($res->{via} eq '/sql')
	{
		$qg->expect_error($res, 403, 'name_not_allowed', 'opaque_scalar without mask rules', names => $refused_name);
		next;
	}
	$qg->expect_rows($res, [ { s => '123-45-6789' } ], 'opaque_scalar without mask rules');
}

# A mask rule on an unrelated table still makes the policy refuse what it cannot trace.
$qg->sql(q{SELECT querygate.mask('plain', 'no_such_table.x', 'hash', force => true)});
$qg->expect_error($_, 403, 'mask_unresolvable', 'opaque_from once the policy has any mask rule', @reads_a_table)
  for $qg->get_both('/q/opaque_from', key => $key{plain});
$qg->sql(q{SELECT querygate.unmask('plain', 'no_such_table.x')});
{
	my ($saved, $adhoc) = $qg->get_both('/q/opaque_from', key => $key{plain});
	is($saved->{status}, 200, 'opaque_from once that rule is removed') or diag(QuerygateTest::describe($saved));
	$qg->expect_error($adhoc, 403, 'name_not_allowed', 'opaque_from once that rule is removed', names => $refused_name);
}

# --- a rule naming a view's column applies to that column (the view is a source as well)
{
	my $vkey = $qg->access(policy => 'viewrule', run_as => 'gov_reader', queries => ['views']);
	$qg->sql(q{SELECT querygate.mask('viewrule', 'people_v.social', 'hash', force => true)});
	$qg->adhoc_twin('viewrule', tables => [qw(people people_v people_vv)]);
	for my $r ($qg->get_both('/q/views', key => $vkey))
	{
		is($r->{json}[0]{social} // '', hmac_of(hash_key($qg, policy => $r->{policy}), '123-45-6789'),
			on_path($r, 'a rule on a view column hashes it'));
		is($r->{json}[0]{contact} // '', 'alice@example.com', on_path($r, 'the view\'s other columns are untouched'))
		  or diag(QuerygateTest::describe($r));
	}
}

# --- explain shows the decisions
is( $qg->sql(q{SELECT string_agg(c->>'name' || '=' || coalesce(c->>'mask', '-'), ',' ORDER BY o)
	FROM jsonb_array_elements(querygate.explain('masked', 'views')->'columns') WITH ORDINALITY AS e(c, o)}),
	'id=-,social=hash,contact=mask,yearly=null', 'explain: the mask of each column of a view');
is($qg->sql(q{SELECT querygate.explain('masked', 'opaque_from')->'refused'->>'code'}), 'mask_unresolvable',
	'explain: a function in FROM is refused');

# --- the schema changes under a kept plan: the next call is masked by the new lineage
is($_->{status}, 200, on_path($_, 'SELECT * before the table changes')) for $qg->get_both('/q/star', key => $key{masked});
$qg->sql(q{ALTER TABLE people ADD COLUMN pin text DEFAULT '4242'; SELECT querygate.mask('masked', 'people.pin', 'hash', force => true);});
for my $res ($qg->get_both('/q/star', key => $key{masked}))
{
	is_deeply([ map { $_->{pin} } @{ ref $res->{json} eq 'ARRAY' ? $res->{json} : [] } ],
		[ (hmac_of(hash_key($qg, policy => $res->{policy}), '4242')) x 3 ],
		on_path($res, 'a column added after the plan was made: SELECT * returns it hashed'))
	  or diag(QuerygateTest::describe($res));
}
is($_->{json}[0]{contact} // '', 'a***', on_path($_, 'the view before it is redefined'))
  for $qg->get_both('/q/views', key => $key{derived});
$qg->sql(q{CREATE OR REPLACE VIEW people_v AS SELECT id, ssn AS social, salary::text AS contact, salary * 12 AS yearly FROM people});
for my $res ($qg->get_both('/q/views', key => $key{derived}))
{
	is_deeply([ map { $_->{contact} } @{ ref $res->{json} eq 'ARRAY' ? $res->{json} : [] } ], [ undef, undef, undef ],
		on_path($res, 'the view redefined (contact now from salary): the next call nulls it'))
	  or diag(QuerygateTest::describe($res));
}

done_testing();
