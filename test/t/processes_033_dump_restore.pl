# pg_dump and pg_restore into a fresh cluster whose OIDs differ: the same answers, the same
# querygate.explain, the same refusals.
#
# The catalog stores policy.run_as as regrole, policy.allowed_tables as regclass[] and
# saved_query.saved_by as regrole, which pg_dump writes by name. Before that, run_as and
# allowed_tables were bare oid columns: a dump carried the numbers, and a restore pointed them at
# whatever then had those numbers. This test builds a target cluster in which those numbers belong
# to other objects, before restoring into it:
#
#   - the OID that dr_reader (the policy's run_as) has in the source is, in the target, the OID of
#     dr_super, a superuser (filler roles move the cluster's one OID counter there; a role takes
#     one OID, so the superuser lands on it exactly, and the test checks that it did);
#   - the OID that dr_accounts (the policy's only allowed table) has in the source is, in the
#     target, the OID of another table, dr_decoy;
#   - dr_other is created before dr_reader, both after those, and the restore creates the tables
#     later still, so dr_reader and dr_accounts have other OIDs than in the source.
#
# With bare OIDs the restored policy runs as dr_super (the current_user query answers dr_super;
# the policies view and explain say run_as dr_super) and its allow-list is {dr_decoy} (the lookup
# and the masked query on dr_accounts are refused with table_not_allowed): run against the oid
# storage (commit 49ba509, with the views' newer columns left out of the comparison), 18 of these
# 60 assertions fail. Only the refusal of the dr_secrets query is the same there, as dr_decoy is
# not dr_secrets. With regrole and regclass[] the restored policy runs as dr_reader and lists
# dr_accounts, and every answer is byte-identical (the same X-Request-Id is sent to both
# clusters, so error bodies are compared whole too).
#
# The hash mask's secret is restored as well: CREATE EXTENSION inside the restore inserts a fresh
# secret and the restored (older) row must win, so hashed values are the same after a restore.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use IPC::Run;

# ---------------------------------------------------------------- the source cluster

my $src = QuerygateTest->start(name => 'dump_source', workers => 2);
$src->sql(q{
	CREATE ROLE dr_reader NOLOGIN;
	CREATE ROLE dr_other NOLOGIN;
	CREATE TABLE dr_accounts (aid int PRIMARY KEY, owner text, email text, balance int);
	CREATE TABLE dr_secrets (id int, secret text);
	INSERT INTO dr_accounts VALUES
	  (1, 'alice', 'alice@example.com', 100),
	  (2, 'bob', 'bob.smith@corp.example.org', 250),
	  (3, 'carol', 'carol@example.com', 42);
	INSERT INTO dr_secrets VALUES (1, 'launch code'), (2, 'root password');
	GRANT SELECT ON dr_accounts TO dr_reader;
	GRANT SELECT ON dr_secrets TO dr_other;
});
$src->sql(q{
	SELECT querygate.save_query('dr_lookup', 'SELECT aid, owner FROM dr_accounts WHERE aid = :aid');
	SELECT querygate.save_query('dr_secret', 'SELECT id, secret FROM dr_secrets WHERE id = :id');
	SELECT querygate.save_query('dr_masked', 'SELECT aid, owner, email, balance FROM dr_accounts ORDER BY aid');
	SELECT querygate.save_query('dr_whoami', 'SELECT current_user::text AS who');
	SELECT querygate.create_policy('reader', 'dr_reader');
	SELECT querygate.grant_query('reader', q)
	  FROM unnest(ARRAY['dr_lookup', 'dr_secret', 'dr_masked', 'dr_whoami']) AS q;
	SELECT querygate.allow_tables('reader', ARRAY['dr_accounts']::regclass[]);
	SELECT querygate.mask('reader', 'dr_accounts.email', 'mask_email');
	SELECT querygate.mask('reader', 'dr_accounts.balance', 'hash');
});
my $key = $src->sql(q{SELECT querygate.create_key('dr_key', 'reader')});
like($key, qr/^qg_[A-Za-z0-9_-]{43}$/, 'source: a key for the policy');

my %src_oid = (
	dr_reader => $src->sql(q{SELECT oid FROM pg_roles WHERE rolname = 'dr_reader'}),
	dr_accounts => $src->sql(q{SELECT 'dr_accounts'::regclass::oid}),
);
note("source OIDs: dr_reader $src_oid{dr_reader}, dr_accounts $src_oid{dr_accounts}");
cmp_ok($src_oid{dr_reader}, '<', $src_oid{dr_accounts}, 'source: dr_reader was created before dr_accounts');

# What is compared between the clusters, read as superuser.
my %catalog_sql = (
	policies => q{SELECT name, run_as::text, allow_superuser, queries::text, allowed_tables::text,
	                     write_ops::text, mask_predicates, masks::text
	                FROM querygate.policies ORDER BY name},
	queries => q{SELECT name, sql, search_path, saved_by::text, params::text
	               FROM querygate.queries ORDER BY name},
	keys => q{SELECT name, policy, expires_at, revoked_at, active FROM querygate.keys ORDER BY name},
);
my @queries = qw(dr_lookup dr_masked dr_secret dr_whoami);

# Calls, each with a fixed X-Request-Id so that whole bodies (error bodies too) can be compared.
my %calls = (
	lookup => '/q/dr_lookup?aid=2',
	masked => '/q/dr_masked',
	secret => '/q/dr_secret?id=1',
	whoami => '/q/dr_whoami',
);

sub call
{
	my ($qg, $name) = @_;
	return fresh_request($qg, 'GET', $calls{$name}, key => $key,
		headers => { 'X-Request-Id' => "dump-restore-$name" });
}

# Everything observable of one cluster: catalog views, explain of each query, the answers.
sub observe
{
	my ($qg) = @_;
	my %o;
	$o{"view $_"} = $qg->sql($catalog_sql{$_}) for sort keys %catalog_sql;
	$o{"explain $_"} = $qg->sql("SELECT querygate.explain('reader', '$_')::text") for @queries;
	for my $c (sort keys %calls)
	{
		my $res = call($qg, $c);
		$o{"call $c"} = "$res->{status} " . ($res->{content} // '');
		$o{res}{$c} = $res;
	}
	$o{mask_secret} = mask_secret($qg);
	$o{hash_key} = hash_key($qg, policy => 'reader');
	note("$_: $o{$_}") for sort grep { $_ ne 'res' && $_ ne 'mask_secret' && $_ ne 'hash_key' } keys %o;
	return \%o;
}

# The exact answers, the same in both clusters (checked against each).
sub expect_answers
{
	my ($qg, $o, $which) = @_;
	is(length $o->{mask_secret}, 32, "$which: the mask secret in use is 32 bytes");
	my $secret = $o->{hash_key}; # reader's answers' key, derived from it
	is( $qg->sql(q{SELECT run_as::text || ' ' || allowed_tables::text FROM querygate.policies WHERE name = 'reader'}),
		'dr_reader {dr_accounts}', "$which: the policy runs as dr_reader and allows dr_accounts");
	is($qg->sql(q{SELECT run_as::oid FROM querygate.policy WHERE name = 'reader'}),
		$qg->sql(q{SELECT oid FROM pg_roles WHERE rolname = 'dr_reader'}),
		"$which: run_as is this cluster's dr_reader OID");
	is($qg->sql(q{SELECT allowed_tables[1]::oid FROM querygate.policy WHERE name = 'reader'}),
		$qg->sql(q{SELECT 'dr_accounts'::regclass::oid}), "$which: allowed_tables is this cluster's dr_accounts OID");

	$qg->expect_rows($o->{res}{lookup}, [ { aid => 2, owner => 'bob' } ], "$which: the lookup");
	my $want_masked = [
		{ aid => 1, owner => 'alice', email => 'a***@example.com', balance => hmac_of($secret, '100') },
		{ aid => 2, owner => 'bob', email => 'b***@corp.example.org', balance => hmac_of($secret, '250') },
		{ aid => 3, owner => 'carol', email => 'c***@example.com', balance => hmac_of($secret, '42') },
	];
	$qg->expect_rows($o->{res}{masked}, $want_masked, "$which: the masked query (email by mask_email, balance hashed)");
	$qg->expect_error($o->{res}{secret}, 403, 'table_not_allowed', "$which: the query reading dr_secrets",
		names => qr/public\.dr_secrets\b/);
	$qg->expect_rows($o->{res}{whoami}, [ { who => 'dr_reader' } ], "$which: a call runs as dr_reader");

	is($qg->sql(q{SELECT querygate.explain('reader', 'dr_whoami')->>'run_as'}), 'dr_reader',
		"$which: explain says run_as dr_reader");
	is($qg->sql(q{SELECT querygate.explain('reader', 'dr_lookup')->'tables'}), '["public.dr_accounts"]',
		"$which: explain of the lookup: it touches public.dr_accounts");
	is($qg->sql(q{SELECT querygate.explain('reader', 'dr_lookup')->'refused'}), 'null',
		"$which: explain of the lookup: refused is null");
	is($qg->sql(q{SELECT querygate.explain('reader', 'dr_secret')->'refused'->>'code'}), 'table_not_allowed',
		"$which: explain of the secrets query: refused with table_not_allowed");
	is( $qg->sql(q{SELECT string_agg(c->>'name' || '=' || coalesce(c->>'mask', '-'), ',')
	                 FROM jsonb_array_elements(querygate.explain('reader', 'dr_masked')->'columns') AS c}),
		'aid=-,owner=-,email=mask_email,balance=hash', "$which: explain of the masked query: its masks");
}

my $before = observe($src);
expect_answers($src, $before, 'source');

# The run history of those calls, in its partitions: pg_dump keeps them (they are tables of the
# extension's schema, not its own objects) and their rows.
my $history_sql = q{SELECT string_agg(request_id || ' ' || status || ' ' || query, ',' ORDER BY request_id)
                      FROM querygate.history WHERE request_id LIKE 'dump-restore-%'};
my $partitions_sql = q{SELECT string_agg(c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid), ',' ORDER BY c.relname)
                         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                        WHERE i.inhparent = 'querygate.history'::regclass};
ok(poll_until(sub { $src->sql(q{SELECT count(*) FROM querygate.history WHERE request_id LIKE 'dump-restore-%'}) == 4 }),
	'source: the four calls are in querygate.history');
my $history_before = $src->sql($history_sql);
my $partitions_before = $src->sql($partitions_sql);

# ---------------------------------------------------------------- the dump

my $dump = PostgreSQL::Test::Utils::tempdir() . '/querygate.dump';
$src->node->command_ok([ 'pg_dump', '-Fc', '-d', $src->node->connstr('postgres'), '-f', $dump ],
	'pg_dump of the source database');

# ---------------------------------------------------------------- the target cluster

# No extension yet: pg_restore creates it.
my $dst = QuerygateTest->start(name => 'dump_target', workers => 2, extension => 0);
is($dst->sql(q{SELECT count(*) FROM pg_extension WHERE extname = 'querygate'}), '0',
	'target: the extension is not installed before the restore');

# Roles take one OID each from the cluster's one counter: filler roles move it to one below the
# source dr_reader's OID, where the superuser dr_super is created, and then to one below the
# source dr_accounts' OID, where the table dr_decoy is created. Its relation OID is the first one
# CREATE TABLE takes.
$dst->sql(qq{
	DO \$\$
	DECLARE
	    n int := 0;
	    got oid := 0;
	BEGIN
	    WHILE got < $src_oid{dr_reader} - 1 LOOP
	        n := n + 1;
	        EXECUTE format('CREATE ROLE %I NOLOGIN', 'dr_fill_' || n);
	        SELECT oid INTO got FROM pg_roles WHERE rolname = 'dr_fill_' || n;
	    END LOOP;
	    IF got <> $src_oid{dr_reader} - 1 THEN
	        RAISE EXCEPTION 'the target OID counter was already past %', $src_oid{dr_reader} - 1;
	    END IF;
	    CREATE ROLE dr_super SUPERUSER NOLOGIN;
	    SELECT oid INTO got FROM pg_roles WHERE rolname = 'dr_super';
	    WHILE got < $src_oid{dr_accounts} - 1 LOOP
	        n := n + 1;
	        EXECUTE format('CREATE ROLE %I NOLOGIN', 'dr_fill_' || n);
	        SELECT oid INTO got FROM pg_roles WHERE rolname = 'dr_fill_' || n;
	    END LOOP;
	    CREATE TABLE dr_decoy (aid int, owner text, email text, balance int);
	END
	\$\$;
	INSERT INTO dr_decoy VALUES (2, 'decoy', 'decoy\@example.com', -1);
	CREATE ROLE dr_other NOLOGIN;
	CREATE ROLE dr_reader NOLOGIN;
});
is($dst->sql("SELECT rolname || ' ' || rolsuper::text FROM pg_roles WHERE oid = $src_oid{dr_reader}"),
	'dr_super true', "target: the source dr_reader's OID ($src_oid{dr_reader}) is the superuser dr_super's");
is($dst->sql("SELECT relname FROM pg_class WHERE oid = $src_oid{dr_accounts}"), 'dr_decoy',
	"target: the source dr_accounts' OID ($src_oid{dr_accounts}) is the table dr_decoy's");
isnt($dst->sql(q{SELECT oid FROM pg_roles WHERE rolname = 'dr_reader'}), $src_oid{dr_reader},
	'target: dr_reader has another OID than in the source');

# ---------------------------------------------------------------- the restore

my ($stdout, $stderr) = ('', '');
my $rc = IPC::Run::run([ 'pg_restore', '--exit-on-error', '-d', $dst->node->connstr('postgres'), $dump ],
	'>', \$stdout, '2>', \$stderr);
ok($rc, 'pg_restore into the target exits with 0') or diag("pg_restore: $stderr");
note("pg_restore said: $stderr") if length $stderr;
is($dst->sql(q{SELECT extversion FROM pg_extension WHERE extname = 'querygate'}), '0.1.0',
	'target: the restore created the extension');
isnt($dst->sql(q{SELECT 'dr_accounts'::regclass::oid}), $src_oid{dr_accounts},
	'target: dr_accounts has another OID than in the source');
is($dst->sql(q{SELECT count(*) FROM querygate.mask_secret}), '2',
	'target: two mask secrets, the restored one and the one CREATE EXTENSION made');
is($dst->sql($partitions_sql), $partitions_before, "target: querygate.history's partitions, with their bounds");
is($dst->sql($history_sql), $history_before, 'target: the run history of the source, row for row');

# The workers answered 503 (not installed) until the restore; poll until they do not.
ok( poll_until(sub { fresh_request($dst, 'GET', '/q/dr_whoami', key => $key)->{status} != 503 }),
	'target: the workers serve the restored catalog');

my $after = observe($dst);
expect_answers($dst, $after, 'target');

# ---------------------------------------------------------------- the same, byte for byte

is($after->{mask_secret}, $before->{mask_secret}, 'the restored mask secret is the one in use (oldest row wins)');
for my $k (sort grep { $_ ne 'res' && $_ ne 'mask_secret' } keys %$before)
{
	is($after->{$k}, $before->{$k}, "identical after the restore: $k");
}

done_testing();
