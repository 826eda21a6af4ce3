# Upgrade scripts: a database updated from an earlier version has exactly the catalog of a fresh
# install of the current one.
#
# For every version V that has an install script (querygate--V.sql) other than the current one,
# and for every chain of upgrade scripts (querygate--A--B.sql) that leads from V to the current
# version, the test creates the extension at V in a database of its own, updates it (with a plain
# `ALTER EXTENSION querygate UPDATE` along the path PostgreSQL itself picks, and step by step with
# `UPDATE TO` along every other path), and compares its catalog with a fresh `CREATE EXTENSION
# querygate` in another database, section by section:
#
#   extension           version, schema, relocatable, owner, comment
#   members             every object of the extension (pg_describe_object over pg_depend, deptype 'e')
#   schema              the extension's schema and its owner
#   functions           every function's signature and whole definition (pg_get_functiondef), owner
#   relations           tables, views (their definition), sequences (their parameters), ...
#   columns             each column's position among the live columns, type, NOT NULL, default,
#                       identity, generated, collation, compression
#   constraints, indexes, triggers, rules, row_security, types
#   privileges          the effective ACL of the schema, each relation, column, function and type
#   initial_privileges  pg_init_privs of the extension's objects (what pg_dump takes as its own)
#   comments
#   config              pg_extension.extconfig with extcondition: the tables pg_dump keeps
#   rows                how many rows each table holds (a fresh install seeds mask_secret)
#
# Nothing compared holds an OID, so two databases compare equal exactly when their catalogs are the
# same; a difference is reported as the objects missing, extra or different after the upgrade.
# An update path that does not reach the current version, or an install or update that fails, is a
# failure too.
#
# With one version only (0.1.0, the first release), there is no path to compare: the test still
# checks that the current version's install script is installed, that the snapshot sees every
# function, table, view, sequence, trigger and config table the install script creates, that
# `ALTER EXTENSION querygate UPDATE` on a fresh install is a no-op (the catalog is the same before
# and after), and that a second fresh install in another database (other OIDs) compares equal; the
# per-path comparisons are skipped with "no earlier version".
#
# The scripts are read from the installed extension directory (SHAREDIR/extension), which
# `make install` (and so `make test`) fills from extension/querygate--*.sql. A script deleted from
# extension/ stays installed until it is deleted from there too.
#
# Adding the next version (say 0.2.0 after 0.1.0):
#   1. Keep extension/querygate--0.1.0.sql as it is: it is what 0.1.0's users installed.
#   2. Write extension/querygate--0.1.0--0.2.0.sql (the change) and extension/querygate--0.2.0.sql
#      (the whole new install script: a copy of 0.1.0's with the change made in place).
#   3. Set EXTVERSION = 0.2.0 in the Makefile, and the version (and provides.querygate: version and
#      file) in META.json; add the version to CHANGELOG.md.
#   4. Run this test (flock /tmp/querygate-install.lock env PROVE_TESTS=test/t/processes_040_upgrade.pl
#      REGRESS_TESTS=keys make test). What it usually catches:
#      - a column added by ALTER TABLE ... ADD COLUMN lands last: put it last in the CREATE TABLE
#        of the new install script too;
#      - names PostgreSQL generates (constraints, indexes) can differ between CREATE TABLE and
#        ALTER TABLE: name new constraints and indexes explicitly in both scripts;
#      - grants and revokes: the upgrade script must repeat for new objects what the install
#        script's REVOKE ... FROM PUBLIC and GRANT ... TO querygate_admin do;
#      - a new catalog table needs pg_extension_config_dump in both scripts, and the trigger that
#        tells the workers of changes;
#      - CREATE OR REPLACE FUNCTION cannot change a function's result type or argument names:
#        DROP it and CREATE it again, then grant it again.
#   Older install scripts must still load against the current library: a C symbol that an older
#   script names (AS 'MODULE_PATHNAME', 'querygate_x') must stay in the library (as a function that
#   raises an error, if nothing needs it any more), for this test and for databases still at that
#   version until they are updated. An install script may be removed once no supported path starts
#   from its version; the test then starts from the versions that remain.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

# ---------------------------------------------------------------- the catalog of one database

# One jsonb object: {section: {object: description}}. Every name is schema-qualified or a
# description; ACL items are sorted and a NULL ACL is read as the default it stands for, so the same
# privileges granted in another order compare equal.
my $SNAPSHOT_SQL = <<'SQL';
WITH ext AS (
    SELECT e.oid, e.extnamespace FROM pg_catalog.pg_extension e WHERE e.extname = 'querygate'
),
members AS (
    SELECT d.classid, d.objid, d.objsubid
      FROM pg_catalog.pg_depend d, ext
     WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.refobjid = ext.oid
       AND d.deptype = 'e'
),
-- Relations, functions and types of the extension, or in its schema (one that an update left
-- outside the extension is still compared).
rels AS (
    SELECT c.oid, c.relkind, c.relowner, c.relacl
      FROM pg_catalog.pg_class c, ext
     WHERE (c.oid IN (SELECT objid FROM members WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass)
            OR c.relnamespace = ext.extnamespace)
       AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
),
funcs AS (
    SELECT p.oid, p.prokind, p.proowner, p.proacl
      FROM pg_catalog.pg_proc p, ext
     WHERE p.oid IN (SELECT objid FROM members WHERE classid = 'pg_catalog.pg_proc'::pg_catalog.regclass)
        OR p.pronamespace = ext.extnamespace
),
-- Not the row types of tables and views, nor array types: their relation or element is compared.
types AS (
    SELECT t.oid, t.typowner, t.typacl, t.typtype, t.typbasetype, t.typtypmod, t.typnotnull, t.typdefault
      FROM pg_catalog.pg_type t, ext
     WHERE (t.oid IN (SELECT objid FROM members WHERE classid = 'pg_catalog.pg_type'::pg_catalog.regclass)
            OR t.typnamespace = ext.extnamespace)
       AND NOT (t.typrelid <> 0
                AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid) <> 'c')
       AND NOT (t.typelem <> 0 AND t.typsubscript = 'pg_catalog.array_subscript_handler'::pg_catalog.regproc)
),
cols AS (
    SELECT a.attrelid, a.attnum, a.attname, a.atttypid, a.atttypmod, a.attnotnull, a.attidentity,
           a.attgenerated, a.attcollation, a.attcompression, a.attacl,
           pg_catalog.row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS position
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid IN (SELECT oid FROM rels WHERE relkind <> 'S') AND a.attnum > 0
       AND NOT a.attisdropped
),
sections(section, key, value) AS (
    SELECT 'members', pg_catalog.pg_describe_object(classid, objid, objsubid), 'member'
      FROM members
  UNION ALL
    SELECT 'extension', e.extname::text,
           pg_catalog.jsonb_build_object('version', e.extversion,
               'schema', e.extnamespace::pg_catalog.regnamespace::text,
               'relocatable', e.extrelocatable, 'owner', pg_catalog.pg_get_userbyid(e.extowner),
               'comment', pg_catalog.obj_description(e.oid, 'pg_extension'))::text
      FROM pg_catalog.pg_extension e WHERE e.extname = 'querygate'
  UNION ALL
    SELECT 'config', x.c::pg_catalog.regclass::text, coalesce(e.extcondition[x.i], '(no condition)')
      FROM pg_catalog.pg_extension e, unnest(e.extconfig) WITH ORDINALITY AS x(c, i)
     WHERE e.extname = 'querygate'
  UNION ALL
    SELECT 'schema', n.nspname::text, 'owner ' || pg_catalog.pg_get_userbyid(n.nspowner)
      FROM pg_catalog.pg_namespace n, ext WHERE n.oid = ext.extnamespace
  UNION ALL
    SELECT 'functions', f.oid::pg_catalog.regprocedure::text,
           CASE WHEN f.prokind = 'a' THEN
               (SELECT pg_catalog.jsonb_build_object('aggregate', a.aggkind::text,
                           'transition', a.aggtransfn::text, 'final', a.aggfinalfn::text,
                           'combine', a.aggcombinefn::text,
                           'state', a.aggtranstype::pg_catalog.regtype::text, 'initial', a.agginitval,
                           'sort_operator', a.aggsortop::pg_catalog.regoperator::text)::text
                  FROM pg_catalog.pg_aggregate a WHERE a.aggfnoid = f.oid)
           ELSE pg_catalog.pg_get_functiondef(f.oid) END
           || E'\nowner ' || pg_catalog.pg_get_userbyid(f.proowner)
      FROM funcs f
  UNION ALL
    SELECT 'relations', c.oid::pg_catalog.regclass::text,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'kind', c.relkind::text, 'owner', pg_catalog.pg_get_userbyid(c.relowner),
               'persistence', c.relpersistence::text, 'options', c.reloptions,
               'row_security', c.relrowsecurity, 'force_row_security', c.relforcerowsecurity,
               'replica_identity', c.relreplident::text,
               'tablespace', (SELECT spcname FROM pg_catalog.pg_tablespace WHERE oid = c.reltablespace),
               'access_method', (SELECT amname FROM pg_catalog.pg_am WHERE oid = c.relam),
               'partition_key', pg_catalog.pg_get_partkeydef(c.oid),
               'partition_bound', pg_catalog.pg_get_expr(c.relpartbound, c.oid),
               'inherits', (SELECT pg_catalog.array_agg(i.inhparent::pg_catalog.regclass::text ORDER BY i.inhseqno)
                              FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid),
               'view', CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid, true) END,
               'sequence', (SELECT pg_catalog.jsonb_build_object('type', s.seqtypid::pg_catalog.regtype::text,
                                       'start', s.seqstart, 'increment', s.seqincrement, 'min', s.seqmin,
                                       'max', s.seqmax, 'cache', s.seqcache, 'cycle', s.seqcycle)
                              FROM pg_catalog.pg_sequence s WHERE s.seqrelid = c.oid),
               'owned_by', (SELECT d.refobjid::pg_catalog.regclass::text || '.' || pg_catalog.quote_ident(a.attname)
                              FROM pg_catalog.pg_depend d
                              JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                             WHERE c.relkind = 'S'
                               AND d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                               AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
                               AND d.deptype IN ('a', 'i'))))::text
      FROM pg_catalog.pg_class c WHERE c.oid IN (SELECT oid FROM rels)
  UNION ALL
    SELECT 'columns', c.attrelid::pg_catalog.regclass::text || '.' || pg_catalog.quote_ident(c.attname),
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'position', c.position, 'type', pg_catalog.format_type(c.atttypid, c.atttypmod),
               'not_null', c.attnotnull,
               'default', (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) FROM pg_catalog.pg_attrdef d
                            WHERE d.adrelid = c.attrelid AND d.adnum = c.attnum),
               'identity', nullif(c.attidentity::text, ''), 'generated', nullif(c.attgenerated::text, ''),
               'collation', (SELECT collname FROM pg_catalog.pg_collation WHERE oid = c.attcollation),
               'compression', nullif(c.attcompression::text, '')))::text
      FROM cols c
  UNION ALL
    SELECT 'constraints',
           CASE WHEN co.conrelid <> 0 THEN co.conrelid::pg_catalog.regclass::text
                ELSE 'domain ' || co.contypid::pg_catalog.regtype::text END || ' ' || co.conname,
           co.contype::text || ' ' || pg_catalog.pg_get_constraintdef(co.oid, true)
      FROM pg_catalog.pg_constraint co
     WHERE co.conrelid IN (SELECT oid FROM rels) OR co.contypid IN (SELECT oid FROM types)
  UNION ALL
    SELECT 'indexes', i.indexrelid::pg_catalog.regclass::text,
           pg_catalog.pg_get_indexdef(i.indexrelid)
           || CASE WHEN i.indisclustered THEN ' (clustered)' ELSE '' END
           || CASE WHEN i.indisreplident THEN ' (replica identity)' ELSE '' END
      FROM pg_catalog.pg_index i WHERE i.indrelid IN (SELECT oid FROM rels)
  UNION ALL
    SELECT 'triggers', t.tgrelid::pg_catalog.regclass::text || ' ' || t.tgname,
           pg_catalog.pg_get_triggerdef(t.oid, true) || ' (enabled ' || t.tgenabled::text || ')'
      FROM pg_catalog.pg_trigger t WHERE t.tgrelid IN (SELECT oid FROM rels) AND NOT t.tgisinternal
  UNION ALL
    SELECT 'rules', ru.ev_class::pg_catalog.regclass::text || ' ' || ru.rulename,
           pg_catalog.pg_get_ruledef(ru.oid, true) || ' (enabled ' || ru.ev_enabled::text || ')'
      FROM pg_catalog.pg_rewrite ru
     WHERE ru.ev_class IN (SELECT oid FROM rels) AND ru.rulename <> '_RETURN'
  UNION ALL
    SELECT 'row_security', po.polrelid::pg_catalog.regclass::text || ' ' || po.polname,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'command', po.polcmd::text, 'permissive', po.polpermissive,
               'roles', (SELECT pg_catalog.array_agg(CASE WHEN r = 0 THEN 'public'
                                                          ELSE pg_catalog.pg_get_userbyid(r)::text END ORDER BY 1)
                           FROM unnest(po.polroles) AS r),
               'using', pg_catalog.pg_get_expr(po.polqual, po.polrelid),
               'with_check', pg_catalog.pg_get_expr(po.polwithcheck, po.polrelid)))::text
      FROM pg_catalog.pg_policy po WHERE po.polrelid IN (SELECT oid FROM rels)
  UNION ALL
    SELECT 'types', t.oid::pg_catalog.regtype::text,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'type', t.typtype::text, 'owner', pg_catalog.pg_get_userbyid(t.typowner),
               'base', CASE WHEN t.typbasetype <> 0 THEN pg_catalog.format_type(t.typbasetype, t.typtypmod) END,
               'not_null', t.typnotnull, 'default', t.typdefault,
               'labels', (SELECT pg_catalog.array_agg(e.enumlabel::text ORDER BY e.enumsortorder)
                            FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid),
               'attributes', (SELECT pg_catalog.array_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
                                                          ORDER BY a.attnum)
                                FROM pg_catalog.pg_attribute a, pg_catalog.pg_type tt
                               WHERE tt.oid = t.oid AND a.attrelid = tt.typrelid AND a.attnum > 0
                                 AND NOT a.attisdropped)))::text
      FROM types t
  UNION ALL
    SELECT 'privileges', 'schema ' || n.nspname,
           (SELECT pg_catalog.string_agg(x::text, ' ' ORDER BY x::text)
              FROM unnest(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) AS x)
      FROM pg_catalog.pg_namespace n, ext WHERE n.oid = ext.extnamespace
  UNION ALL
    SELECT 'privileges', 'relation ' || r.oid::pg_catalog.regclass::text,
           (SELECT pg_catalog.string_agg(x::text, ' ' ORDER BY x::text)
              FROM unnest(coalesce(r.relacl,
                                   pg_catalog.acldefault((CASE WHEN r.relkind = 'S' THEN 's' ELSE 'r' END)::"char",
                                                         r.relowner))) AS x)
      FROM rels r
  UNION ALL
    SELECT 'privileges', 'column ' || c.attrelid::pg_catalog.regclass::text || '.' || pg_catalog.quote_ident(c.attname),
           (SELECT pg_catalog.string_agg(x::text, ' ' ORDER BY x::text) FROM unnest(c.attacl) AS x)
      FROM cols c WHERE pg_catalog.cardinality(c.attacl) > 0
  UNION ALL
    SELECT 'privileges', 'function ' || f.oid::pg_catalog.regprocedure::text,
           (SELECT pg_catalog.string_agg(x::text, ' ' ORDER BY x::text)
              FROM unnest(coalesce(f.proacl, pg_catalog.acldefault('f', f.proowner))) AS x)
      FROM funcs f
  UNION ALL
    SELECT 'privileges', 'type ' || t.oid::pg_catalog.regtype::text,
           (SELECT pg_catalog.string_agg(x::text, ' ' ORDER BY x::text)
              FROM unnest(coalesce(t.typacl, pg_catalog.acldefault('T', t.typowner))) AS x)
      FROM types t
  UNION ALL
    SELECT 'initial_privileges',
           pg_catalog.pg_describe_object(ip.classoid, ip.objoid, ip.objsubid) || ' (' || ip.privtype::text || ')',
           (SELECT pg_catalog.string_agg(x::text, ' ' ORDER BY x::text) FROM unnest(ip.initprivs) AS x)
      FROM pg_catalog.pg_init_privs ip
     WHERE ip.privtype = 'e'
        OR (ip.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND ip.objoid IN (SELECT oid FROM rels))
        OR (ip.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND ip.objoid IN (SELECT oid FROM funcs))
        OR (ip.classoid = 'pg_catalog.pg_type'::pg_catalog.regclass AND ip.objoid IN (SELECT oid FROM types))
        OR (ip.classoid = 'pg_catalog.pg_namespace'::pg_catalog.regclass AND ip.objoid IN (SELECT extnamespace FROM ext))
  UNION ALL
    SELECT 'comments', pg_catalog.pg_describe_object(d.classoid, d.objoid, d.objsubid), d.description
      FROM pg_catalog.pg_description d
     WHERE (d.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objoid IN (SELECT oid FROM rels))
        OR (d.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objoid IN (SELECT oid FROM funcs))
        OR (d.classoid = 'pg_catalog.pg_type'::pg_catalog.regclass AND d.objoid IN (SELECT oid FROM types))
        OR (d.classoid = 'pg_catalog.pg_namespace'::pg_catalog.regclass AND d.objoid IN (SELECT extnamespace FROM ext))
        OR (d.classoid, d.objoid) IN (SELECT classid, objid FROM members)
  UNION ALL
    -- How many rows, not which: a fresh install's seeded values may be random (mask_secret).
    SELECT 'rows', r.oid::pg_catalog.regclass::text,
           (pg_catalog.xpath('/row/n/text()',
                pg_catalog.query_to_xml(pg_catalog.format('SELECT count(*) AS n FROM %s', r.oid::pg_catalog.regclass),
                                        false, true, '')))[1]::text
      FROM rels r WHERE r.relkind IN ('r', 'p', 'm')
)
SELECT pg_catalog.jsonb_object_agg(section, keys)
  FROM (SELECT section, pg_catalog.jsonb_object_agg(key, coalesce(value, '(null)')) AS keys
          FROM sections GROUP BY section) s;
SQL

my @SECTIONS = qw(extension members schema functions relations columns constraints indexes triggers
  rules row_security types privileges initial_privileges comments config rows);

# Without the library preloaded: creating and updating the extension needs no worker, and DROP
# DATABASE, which this test runs after each path, waits for every process to absorb a
# ProcSignalBarrier, which the WAL flusher of a preloaded library does not do (its loop never calls
# CHECK_FOR_INTERRUPTS), so it would wait forever.
my $qg = QuerygateTest->start(name => 'upgrade', preload => 0, extension => 0);
my $node = $qg->node;

# Runs SQL in a database; returns (ok, stdout, stderr) and never dies.
sub run_sql
{
	my ($db, $sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql($db, $sql, stdout => \$out, stderr => \$err, on_error_stop => 1);
	return ($rc == 0, $out, $err);
}

# Runs SQL that must succeed (the test's own setup); dies otherwise.
sub must_sql
{
	my ($db, $sql) = @_;
	my ($ok, $out, $err) = run_sql($db, $sql);
	die "in database $db: $sql\n$err" unless $ok;
	return $out;
}

sub snapshot
{
	my ($db) = @_;
	my $snap = json_decode(must_sql($db, $SNAPSHOT_SQL)) // {};
	return $snap;
}

# One assertion per section: passes when both catalogs hold the same objects with the same
# descriptions; else lists what is missing, extra or different in $got against $want.
sub compare_catalogs
{
	my ($got, $want, $label, $got_name, $want_name) = @_;
	$got_name //= 'updated';
	$want_name //= 'fresh';
	my $w = length($got_name) > length($want_name) ? length($got_name) : length($want_name);
	my %known = map { $_ => 1 } @SECTIONS;
	for my $s (sort grep { !$known{$_} } keys %$got, keys %$want)
	{
		fail("$label: section $s is compared");    # a section added to the SQL but not to @SECTIONS
	}
	for my $s (@SECTIONS)
	{
		my ($g, $h) = ($got->{$s} // {}, $want->{$s} // {});
		my %keys = map { $_ => 1 } keys %$g, keys %$h;
		my @diff;
		for my $k (sort keys %keys)
		{
			if (!exists $g->{$k})
			{
				push @diff, "missing in $got_name: $k\n  " . sprintf('%*s: ', $w, $want_name) . $h->{$k};
			}
			elsif (!exists $h->{$k})
			{
				push @diff, "missing in $want_name: $k\n  " . sprintf('%*s: ', $w, $got_name) . $g->{$k};
			}
			elsif ($g->{$k} ne $h->{$k})
			{
				push @diff, "differs: $k\n  " . sprintf('%*s: ', $w, $got_name) . $g->{$k}
				  . "\n  " . sprintf('%*s: ', $w, $want_name) . $h->{$k};
			}
		}
		ok(!@diff, "$label: $s (" . scalar(keys %keys) . ' compared)')
		  or diag(join("\n", scalar(@diff) . " difference(s) in $s:", @diff));
	}
}

my $dbn = 0;

sub new_database
{
	my ($hint) = @_;
	my $db = 'upgrade_' . ++$dbn . "_$hint";
	$db =~ s/[^a-z0-9_]+/_/g;
	$db = substr($db, 0, 63);
	must_sql('postgres', "CREATE DATABASE $db");
	return $db;
}

# ---------------------------------------------------------------- the versions installed

my $current = must_sql('postgres',
	q{SELECT default_version FROM pg_catalog.pg_available_extensions WHERE name = 'querygate'});
my $extdir = must_sql('postgres', q{SELECT setting FROM pg_catalog.pg_config WHERE name = 'SHAREDIR'})
  . '/extension';
like($current, qr/^\d+\.\d+\.\d+$/, "the control file's default version is $current");

my (%install, @updates);
opendir(my $dh, $extdir) or die "opendir $extdir: $!";
for my $f (sort readdir $dh)
{
	next unless $f =~ /^querygate--(.+)\.sql$/;
	my @v = split /--/, $1;
	if (@v == 1) { $install{ $v[0] } = "$extdir/$f"; }
	elsif (@v == 2) { push @updates, [@v]; }
}
closedir $dh;
note("installed in $extdir: install scripts for " . join(', ', sort keys %install)
	  . '; update scripts ' . (join(', ', map { "$_->[0]--$_->[1]" } @updates) || 'none'));

ok(-f "$extdir/querygate--$current.sql", "the install script of the current version is installed (querygate--$current.sql)")
  or BAIL_OUT("no install script for $current in $extdir");

# ---------------------------------------------------------------- a fresh install

my $fresh_db = new_database('fresh');
must_sql($fresh_db, 'CREATE EXTENSION querygate');
my $fresh = snapshot($fresh_db);

# The snapshot sees what the install script creates: the comparisons below can fail.
{
	my $script = slurp_file("$extdir/querygate--$current.sql");
	$script =~ s/--[^\n]*//g;
	my %member = %{ $fresh->{members} // {} };
	my @missing;
	my %seen;
	while ($script =~ /\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:querygate\.)?(\w+)\s*\(/gi)
	{
		$seen{function}++;
		push @missing, "function $1" unless grep { /^function querygate\.\Q$1\E\(/ } keys %member;
	}
	while ($script =~ /\bCREATE\s+(TABLE|VIEW|SEQUENCE|MATERIALIZED\s+VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:querygate\.)?(\w+)/gi)
	{
		my $kind = lc $1;
		$kind =~ s/\s+/ /g;
		$seen{$kind}++;
		push @missing, "$kind $2" unless exists $member{"$kind querygate.$2"};
	}
	while ($script =~ /\bCREATE\s+TRIGGER\s+(\w+)\s.*?\bON\s+(?:querygate\.)?(\w+)/gis)
	{
		$seen{trigger}++;
		push @missing, "trigger $1 on $2" unless exists $fresh->{triggers}{"querygate.$2 $1"};
	}
	while ($script =~ /pg_extension_config_dump\s*\(\s*'(?:querygate\.)?(\w+)'/gi)
	{
		$seen{config}++;
		push @missing, "config table $1" unless exists $fresh->{config}{"querygate.$1"};
	}
	ok($seen{function} && $seen{table} && $seen{trigger} && $seen{config},
		'the install script creates functions, tables, triggers and config tables ('
		  . join(', ', map { "$_ $seen{$_}" } sort keys %seen) . ')');
	is(join(', ', @missing), '', 'the snapshot of a fresh install sees every one of them');
	like($fresh->{privileges}{'function querygate.save_query(text,text,text,jsonb,boolean)'} // '',
		qr/\bquerygate_admin=X\//, 'the snapshot sees the grants to querygate_admin');
	is($fresh->{extension}{querygate} && json_decode($fresh->{extension}{querygate})->{version},
		$current, "the snapshot is of version $current");
}

# ---------------------------------------------------------------- ALTER EXTENSION UPDATE at the current version

{
	my $db = new_database('noop');
	must_sql($db, 'CREATE EXTENSION querygate');
	my $before = snapshot($db);
	my ($ok, $out, $err) = run_sql($db, 'ALTER EXTENSION querygate UPDATE');
	ok($ok, 'ALTER EXTENSION querygate UPDATE on a fresh install succeeds') or diag($err);
	like($err, qr/version "\Q$current\E" of extension "querygate" is already installed/,
		'it says the current version is already installed');
	is(must_sql($db, q{SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'querygate'}),
		$current, 'the version is unchanged');
	my $after = snapshot($db);
	compare_catalogs($after, $before, 'a no-op update leaves the catalog as it was', 'after', 'before');
	# The same machinery as for an update path: nothing it compares depends on OIDs or on the database.
	compare_catalogs($after, $fresh, 'a fresh install in another database (other OIDs)', 'this one', 'fresh');
	must_sql('postgres', "DROP DATABASE $db");
}

# ---------------------------------------------------------------- every path from every earlier version

my %next;
push @{ $next{ $_->[0] } }, $_->[1] for @updates;

# Every chain of update scripts from $from to $to that visits no version twice.
sub paths
{
	my ($from, $to, %seen) = @_;
	return ([$from]) if $from eq $to;
	my @out;
	for my $n (sort @{ $next{$from} // [] })
	{
		next if $seen{$n};
		push @out, map { [ $from, @$_ ] } paths($n, $to, %seen, $from => 1, $n => 1);
	}
	return @out;
}

# The path PostgreSQL takes for ALTER EXTENSION querygate UPDATE, as 'a--b--c', or '' for none.
sub postgres_path
{
	my ($from) = @_;
	return must_sql('postgres',
		'SELECT path FROM pg_catalog.pg_extension_update_paths(\'querygate\') WHERE source = '
		  . sql_quote($from) . ' AND target = ' . sql_quote($current));
}

my @earlier = grep { $_ ne $current } sort keys %install;
SKIP:
{
	skip 'no earlier version', 1 unless @earlier;

	for my $v (@earlier)
	{
		my $pg_path = postgres_path($v);
		ok($pg_path ne '', "$v: PostgreSQL finds an update path to $current" . ($pg_path ? " ($pg_path)" : ''));
		my @paths = paths($v, $current);
		ok(@paths > 0, "$v: " . scalar(@paths) . " update path(s) to $current");

		for my $p (@paths)
		{
			my $label = join(' -> ', @$p);
			my $plain = join('--', @$p) eq $pg_path;
			my $db = new_database($label);
			my ($ok, $out, $err) = run_sql($db, 'CREATE EXTENSION querygate VERSION ' . sql_quote($v));
			ok($ok, "$label: CREATE EXTENSION querygate VERSION '$v'") or diag($err);
			next unless $ok;
			is(must_sql($db, q{SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'querygate'}),
				$v, "$label: installed at $v");
			if ($plain)
			{
				($ok, $out, $err) = run_sql($db, 'ALTER EXTENSION querygate UPDATE');
				ok($ok, "$label: ALTER EXTENSION querygate UPDATE (the path PostgreSQL takes)") or diag($err);
			}
			else
			{
				for my $step (@$p[ 1 .. $#$p ])
				{
					($ok, $out, $err) = run_sql($db, 'ALTER EXTENSION querygate UPDATE TO ' . sql_quote($step));
					ok($ok, "$label: ALTER EXTENSION querygate UPDATE TO '$step'") or diag($err);
					last unless $ok;
				}
			}
			next unless $ok;
			is(must_sql($db, q{SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'querygate'}),
				$current, "$label: updated to $current");
			compare_catalogs(snapshot($db), $fresh, "$label, compared with a fresh $current");
			must_sql('postgres', "DROP DATABASE $db");
		}
	}
}

# A version that only update scripts name (its install script removed) must still lead to the
# current version: databases may be at it.
my %sources = map { $_->[0] => 1 } @updates;
for my $v (sort grep { !$install{$_} && $_ ne $current } keys %sources)
{
	my $pg_path = postgres_path($v);
	ok($pg_path ne '', "$v (update scripts only): PostgreSQL finds an update path to $current");
}

done_testing();
