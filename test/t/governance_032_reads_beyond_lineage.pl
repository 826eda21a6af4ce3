# What an allow-list and masking cover beyond the relations and columns a statement names.
# Under a table allow-list, a function that can read any table by itself (query_to_xml,
# table_to_xml, ts_rewrite with a query, a user-defined SQL or PL/pgSQL function) is refused, with or without mask rules:
# 403 table_not_allowed, and grant_query refuses such a query up front. Under a masking policy,
# the statistics that hold copies of column values (pg_stats' histogram bounds and most common
# values; pg_stats_ext reads the same kind of copies, and shows only a table owner's) are refused:
# 403 mask_unresolvable. A policy without the rule still
# gets the answer, so each refusal is the rule's and not a failure. Every call is also sent as
# POST /sql with the query's text, by a twin of its policy with the same rules, granted ad-hoc SQL
# (QuerygateTest::both; the twin of a policy without a list has one of the three tables). There
# each read is refused whatever the policy, and by design before the policy's rules are asked:
# a built-in that reads the database is function_not_allowed, a table named by a text (a regclass)
# and the statistics views are name_not_allowed, and so is a user-defined function (a function
# that is not built-in is refused as a name, as one that does not exist is).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'reads_beyond_lineage');
$qg->sql(q{
	CREATE ROLE rb_reader NOLOGIN;
	CREATE TABLE rb_public (id int PRIMARY KEY, label text);
	CREATE TABLE rb_secret (id int PRIMARY KEY, secret text);
	CREATE TABLE rb_accounts (id int PRIMARY KEY, city text, tier int, balance int);
	INSERT INTO rb_public VALUES (1, 'one');
	INSERT INTO rb_secret VALUES (1, 'the-secret');
	INSERT INTO rb_accounts SELECT g, 'city' || (g % 3), 1000 + g % 5, 1000 + g FROM generate_series(1, 200) g;
	ANALYZE rb_accounts;
	GRANT SELECT ON rb_public, rb_secret, rb_accounts TO rb_reader;
	CREATE FUNCTION rb_peek() RETURNS text LANGUAGE sql STABLE AS $$ SELECT secret FROM rb_secret LIMIT 1 $$;
	CREATE FUNCTION rb_peek_pl() RETURNS text LANGUAGE plpgsql STABLE AS
	  $$ BEGIN RETURN (SELECT secret FROM rb_secret LIMIT 1); END $$;
});
my %q = (
	via_xml => q{SELECT label, query_to_xml('SELECT secret FROM rb_secret', false, false, '')::text AS x FROM rb_public},
	via_table_xml => q{SELECT label, table_to_xml('rb_secret', false, false, '')::text AS x FROM rb_public},
	via_ts_rewrite => q{SELECT label, ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, quote_literal(secret)::tsquery FROM rb_secret')::text AS x FROM rb_public},
	via_sql_fn => q{SELECT label, rb_peek() AS x FROM rb_public},
	via_plpgsql_fn => q{SELECT label, rb_peek_pl() AS x FROM rb_public},
	histogram => q{SELECT histogram_bounds::text AS h FROM pg_stats WHERE tablename = 'rb_accounts' AND attname = 'balance'},
	mcv => q{SELECT most_common_vals::text AS m FROM pg_stats WHERE tablename = 'rb_accounts' AND attname = 'tier'},
	plain => q{SELECT label FROM rb_public},
);
$qg->sql(join('', map { 'SELECT querygate.save_query(' . sql_quote($_) . ', ' . sql_quote($q{$_}) . ");\n" } sort keys %q));
my @reads = qw(via_xml via_table_xml via_ts_rewrite via_sql_fn via_plpgsql_fn);

# Granted first, then the allow-list is set: the worker's decision is what is tested here.
my $listed = $qg->access(policy => 'listed', run_as => 'rb_reader', queries => [ @reads, 'plain' ],
	setup => q{SELECT querygate.allow_tables('listed', ARRAY['rb_public']::regclass[]);});
my $listed_masked = $qg->access(policy => 'listed_masked', run_as => 'rb_reader', queries => [ @reads, 'plain' ],
	setup => q{SELECT querygate.allow_tables('listed_masked', ARRAY['rb_public']::regclass[]);
	            SELECT querygate.mask('listed_masked', 'rb_public.id', 'hash', force => true);});
my $open = $qg->access(policy => 'open', run_as => 'rb_reader', queries => [ @reads, 'histogram', 'mcv' ]);
my $masked = $qg->access(policy => 'masked', run_as => 'rb_reader', queries => [ 'histogram', 'mcv', 'plain' ],
	setup => q{SELECT querygate.mask('masked', 'rb_accounts.balance', 'hash', force => true);
	            SELECT querygate.mask('masked', 'rb_accounts.tier', 'hash', force => true);});
$qg->adhoc_twin($_, tables => [qw(rb_public rb_secret rb_accounts)]) for qw(listed listed_masked open masked);
# What POST /sql answers each read, whatever the policy: 403 and [code, options of expect_error].
my %adhoc = (
	via_xml => [ 'function_not_allowed', names => qr/query_to_xml\(\)/ ],
	via_table_xml => ['name_not_allowed'],
	via_ts_rewrite => [ 'function_not_allowed', names => qr/ts_rewrite\(\)/ ],
	via_sql_fn => ['name_not_allowed'],
	via_plpgsql_fn => ['name_not_allowed'],
	histogram => ['name_not_allowed'],
	mcv => ['name_not_allowed'],
);

# --- the allow-list
$qg->expect_rows($_, [ { label => 'one' } ], 'the allow-list admits its table') for $qg->get_both('/q/plain', key => $listed);
for my $name (@reads)
{
	my ($saved, $adhoc) = $qg->get_both("/q/$name", key => $open);
	is($saved->{status}, 200, "$name without an allow-list: 200") or diag(QuerygateTest::describe($saved));
	like($saved->{content}, qr/the-secret/, "$name without an allow-list reads rb_secret");
	my ($code, @o) = @{ $adhoc{$name} };
	$qg->expect_error($adhoc, 403, $code, "$name without an allow-list", @o);
	unlike($adhoc->{content} // '', qr/the-secret/, "$name without an allow-list (POST /sql): the secret is not in the answer");
	for my $p ([ listed => $listed ], [ listed_masked => $listed_masked ])
	{
		for my $res ($qg->get_both("/q/$name", key => $p->[1]))
		{
			$qg->expect_error($res, 403, 'table_not_allowed', "$name under policy $p->[0]", names => qr/can read any table/,
				sql => [ 403, @{ $adhoc{$name} } ]);
			unlike($res->{content} // '', qr/the-secret/, on_path($res, "$name under policy $p->[0]: the secret is not in the answer"));
		}
	}
}
# grant_query refuses such a query up front, naming the function.
like(sql_error($qg, q{SELECT querygate.grant_query('listed', 'via_table_xml')}), qr/^42501 .*calls table_to_xml\(\), which can read any table/,
	'grant_query of a query that calls table_to_xml, under an allow-list: 42501')
  or diag(sql_error($qg, q{SELECT querygate.grant_query('listed', 'via_table_xml')}));
$qg->sql(q{SELECT querygate.revoke_query('listed', 'via_sql_fn')});
like(sql_error($qg, q{SELECT querygate.grant_query('listed', 'via_sql_fn')}), qr/^42501 .*calls rb_peek\(\), which can read any table/,
	'grant_query of a query that calls a user-defined function, under an allow-list: 42501');

# --- statistics under masking
for my $name (qw(histogram mcv))
{
	my ($saved, $adhoc) = $qg->get_both("/q/$name", key => $open);
	is($saved->{status}, 200, "$name without masks: 200") or diag(QuerygateTest::describe($saved));
	like($saved->{content}, qr/10\d\d/, "$name without masks holds the values in clear");
	my ($code, @o) = @{ $adhoc{$name} };
	$qg->expect_error($adhoc, 403, $code, "$name without masks", @o);
	for my $res ($qg->get_both("/q/$name", key => $masked))
	{
		$qg->expect_error($res, 403, 'mask_unresolvable', "$name under a policy that masks the columns",
			names => qr/pg_statistic/, sql => [ 403, @{ $adhoc{$name} } ]);
		# The request id is random hex, which can hold four digits too: it is left out.
		unlike(body_without_request_id($res), qr/10\d\d/, on_path($res, "$name under the masking policy: no value in the answer"));
	}
}
$qg->expect_rows($_, [ { label => 'one' } ], 'the masking policy still answers its other queries')
  for $qg->get_both('/q/plain', key => $masked);

done_testing();
