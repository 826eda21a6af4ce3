# Citus (issue 19, point 2): querygate on the coordinator of a Citus cluster of three nodes on one
# machine (a coordinator and two workers), serving saved queries on a distributed table and a
# reference table:
# - a lookup by the distribution key (routed to one shard), a multi-shard aggregate, a join with a
#   reference table, and a write;
# - governance holds exactly as on a plain table, because the analyzer sees the distributed table
#   (the coordinator's table, whose shards Citus plans behind it): an allow-list refuses the
#   reference table it does not list, a hashed column is hashed, a filter on a masked column is
#   refused, and tenant isolation (isolate_tenant on the distribution column) gives a tenant's key
#   only its tenant's rows, in a routed call, a multi-shard call and a write.
# Runs when Citus is installed in the PostgreSQL under test (scripts/build-citus); skips otherwise.
#
# A policy's role must be able to log in: Citus reaches the workers' shards over connections as
# the current user, which for a call is the policy's role (docs/scaling.md, Citus).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
plan skip_all => "Citus is not installed in this PostgreSQL ($pkglibdir): scripts/build-citus installs it"
  unless -f "$pkglibdir/citus.so";

# Two workers, Citus alone.
my @workers;
for my $n (1 .. 2)
{
	my $w = PostgreSQL::Test::Cluster->new("citus_worker$n");
	$w->init;
	$w->append_conf('postgresql.conf', "shared_preload_libraries = 'citus'\nmax_prepared_transactions = 20\n");
	$w->start;
	$w->safe_psql('postgres', 'CREATE EXTENSION citus');
	push @workers, $w;
}
# The coordinator: Citus first (it must be), then querygate.
my $qg = QuerygateTest->start(name => 'coordinator', extension => 0,
	conf => "shared_preload_libraries = 'citus,querygate'\nmax_prepared_transactions = 20\n"
	  . "querygate.allow_writes = on\n");
my $coordinator = $qg->node;
$qg->sql('CREATE EXTENSION citus');
$qg->sql('CREATE EXTENSION querygate');
$qg->sql("SELECT citus_set_coordinator_host('" . $coordinator->host . "', " . $coordinator->port . ')');
$qg->sql("SELECT citus_add_node('" . $_->host . "', " . $_->port . ')') for @workers;
is($qg->sql('SELECT count(*) FROM citus_get_active_worker_nodes()'), '2', 'a coordinator and two workers');

$qg->sql(q{
	CREATE ROLE cz_role LOGIN;
	CREATE TABLE cz_regions (code text PRIMARY KEY, name text NOT NULL);
	SELECT create_reference_table('cz_regions');
	INSERT INTO cz_regions VALUES ('eu', 'Europe'), ('us', 'Americas');
	CREATE TABLE cz_accounts (tenant text NOT NULL, id int NOT NULL, owner text, ssn text,
	                          region text, balance int NOT NULL, PRIMARY KEY (tenant, id));
	SELECT create_distributed_table('cz_accounts', 'tenant');
	INSERT INTO cz_accounts
	  SELECT t, i, t || '-owner-' || i, 'ssn-' || t || '-' || i, CASE WHEN i % 2 = 0 THEN 'eu' ELSE 'us' END, 100
	    FROM unnest(ARRAY['acme', 'globex', 'initech', 'umbrella']) AS t, generate_series(1, 5) AS i;
	GRANT SELECT, INSERT, UPDATE ON cz_accounts TO cz_role;
	GRANT SELECT ON cz_regions TO cz_role;
});
is($qg->sql(q{SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'cz_accounts'::regclass}), '2',
	"cz_accounts' shards are on both workers");

$qg->sql(q{
	SELECT querygate.save_query('cz_account', 'SELECT id, owner, ssn, balance FROM cz_accounts WHERE tenant = :tenant AND id = :id');
	SELECT querygate.save_query('cz_totals', 'SELECT tenant, count(*)::int AS n, sum(balance)::int AS total FROM cz_accounts GROUP BY tenant ORDER BY tenant');
	SELECT querygate.save_query('cz_by_region', 'SELECT r.name, count(*)::int AS n FROM cz_accounts a JOIN cz_regions r ON r.code = a.region GROUP BY r.name ORDER BY r.name');
	SELECT querygate.save_query('cz_deposit', 'UPDATE cz_accounts SET balance = balance + :amount::int WHERE tenant = :tenant AND id = :id');
	SELECT querygate.save_query('cz_by_ssn', 'SELECT id FROM cz_accounts WHERE ssn = :ssn');
	SELECT querygate.save_query('cz_mine', 'SELECT tenant, id FROM cz_accounts ORDER BY tenant, id');
	SELECT querygate.save_query('cz_open', 'INSERT INTO cz_accounts (tenant, id, balance) VALUES (:tenant, :id::int, 0)');
});
my $key = $qg->access(policy => 'cz_pol', run_as => 'cz_role',
	queries => [qw(cz_account cz_totals cz_by_region cz_deposit cz_by_ssn)],
	setup => q{SELECT querygate.grant_writes('cz_pol', '{update}');});

# ---------------------------------------------------------------- the four kinds of call
$qg->expect_rows($qg->get('/q/cz_account?tenant=globex&id=3', key => $key),
	[ { id => 3, owner => 'globex-owner-3', ssn => 'ssn-globex-3', balance => 100 } ],
	'a lookup by the distribution key (routed to one shard)');
$qg->expect_rows($qg->get('/q/cz_totals', key => $key),
	[ map { { tenant => $_, n => 5, total => 500 } } qw(acme globex initech umbrella) ],
	'a multi-shard aggregate');
$qg->expect_rows($qg->get('/q/cz_by_region', key => $key),
	[ { name => 'Americas', n => 12 }, { name => 'Europe', n => 8 } ], 'a join with a reference table');
$qg->expect_rows($qg->post('/q/cz_deposit?tenant=initech&id=2&amount=25', undef, key => $key),
	{ rows_affected => 1 }, 'a write, routed');
is($qg->sql(q{SELECT balance FROM cz_accounts WHERE tenant = 'initech' AND id = 2}), '125', 'and it is written');

# ---------------------------------------------------------------- governance as on a plain table
# An allow-list that names the distributed table only: the reference table is refused.
my $listed = $qg->access(policy => 'cz_listed', run_as => 'cz_role', queries => [qw(cz_totals cz_by_region)],
	setup => q{SELECT querygate.allow_tables('cz_listed', ARRAY['cz_accounts']::regclass[]);});
is($qg->get('/q/cz_totals', key => $listed)->{status}, 200, 'an allow-list of the distributed table: its calls');
$qg->expect_error($qg->get('/q/cz_by_region', key => $listed), 403, 'table_not_allowed',
	'the reference table it does not list is refused', names => qr/cz_regions/);

# Masks by lineage: hashed as on a plain table; a filter on the masked column is refused.
my $masked = $qg->access(policy => 'cz_masked', run_as => 'cz_role', queries => [qw(cz_account cz_by_ssn)],
	setup => q{SELECT querygate.mask('cz_masked', 'public.cz_accounts.ssn', 'hash', force => true);});
my $res = $qg->get('/q/cz_account?tenant=acme&id=1', key => $masked);
is($res->{status}, 200, 'a masked lookup: 200');
my $ssn = $res->{json}[0]{ssn} // '';
is($ssn, QuerygateTest::hmac_of(QuerygateTest::hash_key($qg, policy => 'cz_masked'), 'ssn-acme-1'), 'the masked column is the HMAC of its value, as on a plain table')
  or diag($res->{content});
$qg->expect_error($qg->get('/q/cz_by_ssn?ssn=ssn-acme-1', key => $masked), 403, 'mask_predicate',
	'a filter on the masked column is refused', names => qr/ssn/);

# Tenant isolation on the distribution column.
# Citus refuses a default on the distribution column, so isolate_tenant sets none there and says so.
my ($rc, $out, $err) = $coordinator->psql('postgres', q{SELECT querygate.isolate_tenant('cz_accounts', 'tenant')});
is($rc, 0, 'isolate_tenant on the distribution column');
like($err, qr/"tenant" is the column Citus distributes public\.cz_accounts by: no default is set/,
	'with a notice that rows must name their tenant');
my $acme = $qg->access(policy => 'cz_tenants', run_as => 'cz_role', queries => [qw(cz_mine cz_account cz_deposit cz_open)],
	key_args => q{tenant => 'acme'}, setup => q{SELECT querygate.grant_writes('cz_tenants', '{insert,update}');});
$qg->expect_rows($qg->get('/q/cz_mine', key => $acme), [ map { { tenant => 'acme', id => $_ } } 1 .. 5 ],
	"a tenant's key sees only its tenant's rows, across the shards");
$qg->expect_rows($qg->get('/q/cz_account?tenant=globex&id=1', key => $acme), [],
	"a routed lookup of another tenant's row finds nothing");
$qg->expect_rows($qg->post('/q/cz_deposit?tenant=globex&id=1&amount=1000', undef, key => $acme), { rows_affected => 0 },
	"a write to another tenant's row changes nothing");
is($qg->sql(q{SELECT balance FROM cz_accounts WHERE tenant = 'globex' AND id = 1}), '100', 'globex is untouched');
$qg->expect_rows($qg->post('/q/cz_deposit?tenant=acme&id=1&amount=1', undef, key => $acme), { rows_affected => 1 },
	'its own row it may write');
$qg->expect_error($qg->post('/q/cz_open?tenant=globex&id=9', undef, key => $acme), 403, 'row_not_allowed',
	"a row inserted for another tenant is refused (the policy's WITH CHECK, on the worker)");
$qg->expect_rows($qg->post('/q/cz_open?tenant=acme&id=9', undef, key => $acme), { rows_affected => 1 },
	'a row for its own tenant is inserted');
is($qg->sql(q{SELECT string_agg(tenant || ':' || id, ',' ORDER BY tenant) FROM cz_accounts WHERE id = 9}), 'acme:9',
	'only that one');

done_testing();
