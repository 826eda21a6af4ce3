# Nothing carries over between calls. One worker serves every call here, so each call that leaves
# something in the session (a setting changed with set_config(..., false), an advisory lock held at
# session level, a LISTEN (PostgreSQL refuses it in a worker), a prepared statement, a cursor WITH
# HOLD, a temporary table, the
# sequence state lastval() reads, random()'s seed) is followed by a probe call, of another policy,
# that must find the worker exactly as the first probe found it. And a read call writes nothing
# anywhere: a notification, a large object, a sequence or a transaction id is 403 read_only,
# whether the saved query calls it directly or through a function.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'call_isolation', workers => 1,
	conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE ROLE ci_app NOLOGIN;
	CREATE ROLE ci_probe NOLOGIN;
	CREATE SCHEMA ci_other;
	CREATE TABLE ci_items (id serial PRIMARY KEY, v text);
	CREATE TABLE ci_other.ci_items (id int, v text);
	INSERT INTO ci_other.ci_items VALUES (1, 'from the other schema');
	GRANT SELECT, INSERT ON ci_items TO ci_app;
	GRANT USAGE, UPDATE ON SEQUENCE ci_items_id_seq TO ci_app;
	GRANT USAGE ON SCHEMA ci_other TO ci_app, ci_probe;
	GRANT SELECT ON ci_other.ci_items TO ci_app, ci_probe;
	GRANT SELECT ON ci_items TO ci_probe;
	-- Functions that leave session state behind, as a saved query may call them.
	CREATE FUNCTION ci_prepare() RETURNS int LANGUAGE plpgsql AS
	  $$ BEGIN EXECUTE 'PREPARE ci_p AS SELECT 1'; RETURN 1; END $$;
	CREATE FUNCTION ci_hold() RETURNS int LANGUAGE sql AS
	  $$ DECLARE ci_c CURSOR WITH HOLD FOR SELECT 1; SELECT 1 $$;
	CREATE FUNCTION ci_listen() RETURNS int LANGUAGE plpgsql AS
	  $$ BEGIN EXECUTE 'LISTEN ci_channel'; RETURN 1; END $$;
	CREATE FUNCTION ci_notify() RETURNS int LANGUAGE plpgsql AS
	  $$ BEGIN PERFORM pg_notify('ci_channel', 'hello'); RETURN 1; END $$;
	CREATE FUNCTION ci_lo() RETURNS oid LANGUAGE plpgsql AS
	  $$ BEGIN RETURN lo_from_bytea(0, 'x'); END $$;
	CREATE FUNCTION ci_xid() RETURNS text LANGUAGE plpgsql AS
	  $$ BEGIN RETURN txid_current()::text; END $$;
	CREATE FUNCTION ci_temp() RETURNS int LANGUAGE plpgsql AS
	  $$ BEGIN CREATE TEMP TABLE ci_tmp (x int); RETURN 1; END $$;
});

my %q = (
	# The probe: what a call can see of the session.
	probe => q{SELECT current_setting('search_path') AS search_path,
	                  coalesce(current_setting('request.jwt.claims', true), '') AS claims,
	                  current_setting('row_security') AS row_security,
	                  current_setting('work_mem') AS work_mem,
	                  (SELECT count(*) FROM pg_prepared_statements)::int AS prepared,
	                  (SELECT count(*) FROM pg_cursors)::int AS cursors,
	                  (SELECT count(*) FROM pg_listening_channels())::int AS listening,
	                  pg_my_temp_schema()::int AS temp_schema,
	                  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())::int AS advisory_locks},
	set_path => q{SELECT set_config('search_path', 'ci_other, public', false) AS v},
	set_claims => q{SELECT set_config('request.jwt.claims', '{"sub":"someone else"}', false) AS v},
	set_row_security => q{SELECT set_config('row_security', 'off', false) AS v},
	set_work_mem_then_fail => q{SELECT set_config('work_mem', '77MB', false) AS v, 1 / :zero AS boom},
	lock => q{SELECT pg_advisory_lock(4242) AS v},
	lock_then_fail => q{SELECT pg_advisory_lock(4343) AS v, 1 / :zero AS boom},
	prepare => q{SELECT ci_prepare() AS v},
	hold => q{SELECT ci_hold() AS v},
	listen_read => q{SELECT ci_listen() AS v},
	listen_write => q{WITH i AS (INSERT INTO ci_items (v) VALUES ('listen') RETURNING id) SELECT ci_listen() AS v FROM i},
	notify => q{SELECT pg_notify('ci_channel', 'hello') AS v},
	notify_fn => q{SELECT ci_notify() AS v},
	lo => q{SELECT lo_from_bytea(0, 'x') AS v},
	lo_fn => q{SELECT ci_lo() AS v},
	xid_fn => q{SELECT ci_xid() AS v},
	nextval_read => q{SELECT nextval('ci_items_id_seq') AS v},
	setval_read => q{SELECT setval('ci_items_id_seq', 1000) AS v},
	temp_write => q{WITH i AS (INSERT INTO ci_items (v) VALUES ('temp') RETURNING id) SELECT ci_temp() AS v FROM i},
	insert => q{INSERT INTO ci_items (v) VALUES (:v) RETURNING id},
	lastval => q{SELECT lastval() AS v},
	currval => q{SELECT currval('ci_items_id_seq') AS v},
	seed => q{SELECT setseed(0.5) AS v},
	random => q{SELECT random() AS v},
	other_items => q{SELECT v FROM ci_items ORDER BY id LIMIT 1},
);
$qg->sql(join('', map { 'SELECT querygate.save_query(' . sql_quote($_) . ', ' . sql_quote($q{$_}) . ");\n" } sort keys %q));
my $app = $qg->access(policy => 'app', run_as => 'ci_app', queries => [ grep { $_ ne 'probe' } sort keys %q ],
	setup => q{SELECT querygate.grant_writes('app', '{insert}');});
my $probe_key = $qg->access(policy => 'probe', run_as => 'ci_probe', queries => [ 'probe', 'other_items' ]);

# POSTed, reads and writes alike (a write is never a GET's).
sub call { my ($name, $args) = @_; return $qg->post("/q/$name" . ($args // ''), undef, key => $app); }
sub probe
{
	my $res = $qg->get('/q/probe', key => $probe_key);
	return $res->{status} == 200 ? $res->{json} : { status => $res->{status}, body => $res->{content} };
}

my $clean = probe();
is(ref $clean, 'ARRAY', 'the probe answers') or diag(explain $clean);
is($clean->[0]{search_path}, 'pg_catalog, public, pg_temp', 'the probe runs with its own stored search_path');

# Each case: the call that leaves something behind (its exact status and code), then the probe.
sub after
{
	my ($name, $status, $code, $why, $args) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = call($name, $args);
	if ($status == 200)
	{
		is($res->{status}, 200, "$why: the call answers 200") or diag(QuerygateTest::describe($res));
	}
	else
	{
		$qg->expect_error($res, $status, $code, "$why: the call");
	}
	is_deeply(probe(), $clean, "$why: the next call finds the session as before");
}

# --- settings changed at session level
after('set_path', 200, undef, 'set_config(search_path, ..., false)');
my $other = $qg->get('/q/other_items', key => $probe_key);
$qg->expect_rows($other, [], 'a later call of another policy still reads public.ci_items, not ci_other.ci_items');
after('set_claims', 200, undef, 'set_config(request.jwt.claims, ..., false)');
after('set_row_security', 200, undef, 'set_config(row_security, off, false)');
after('set_work_mem_then_fail', 500, 'query_failed', 'a session setting, then an error', '?zero=0');

# --- session-level advisory locks
after('lock', 200, undef, 'pg_advisory_lock (session level)');
is($qg->sql('SELECT pg_try_advisory_lock(4242)'), 't', 'another session can take the lock at once');
after('lock_then_fail', 500, 'query_failed', 'pg_advisory_lock, then an error', '?zero=0');
is($qg->sql('SELECT pg_try_advisory_lock(4343)'), 't', 'the lock of the failed call is free too');

# --- prepared statements, cursors WITH HOLD, LISTEN, temporary objects
after('prepare', 200, undef, 'PREPARE from a function');
after('hold', 200, undef, 'DECLARE ... WITH HOLD from a function');
# PostgreSQL itself refuses LISTEN in a background process, read or write.
after('listen_read', 500, 'query_failed', 'LISTEN from a read call');
after('listen_write', 500, 'query_failed', 'LISTEN from a write call');
after('temp_write', 500, 'query_failed', 'CREATE TEMP TABLE from a write call');
is($qg->sql(q{SELECT count(*) FROM ci_items}), '0', 'the write that made a temporary table did not commit');

# --- a read call writes nothing anywhere
my $lo_before = $qg->sql('SELECT count(*) FROM pg_largeobject_metadata');
after('notify', 403, 'read_only', 'pg_notify from a read call');
after('notify_fn', 403, 'read_only', 'pg_notify through a function, from a read call');
after('lo', 403, 'read_only', 'lo_from_bytea from a read call');
after('lo_fn', 403, 'read_only', 'lo_from_bytea through a function, from a read call');
after('xid_fn', 403, 'read_only', 'txid_current through a function (a transaction id), from a read call');
is($qg->sql('SELECT count(*) FROM pg_largeobject_metadata'), $lo_before, 'no large object was created');
my $seq_before = $qg->sql('SELECT last_value FROM ci_items_id_seq');
after('nextval_read', 403, 'read_only', 'nextval from a read call');
after('setval_read', 403, 'read_only', 'setval from a read call');
is($qg->sql('SELECT last_value FROM ci_items_id_seq'), $seq_before, 'the sequence did not move');

# --- sequence state: lastval() and currval() would tell the next caller another call's id
my $ins = $qg->post('/q/insert?v=secret-id', undef, key => $app);
is($ins->{status}, 200, 'an insert through the sequence') or diag(QuerygateTest::describe($ins));
$qg->expect_error(call('lastval'), 500, 'query_failed', 'lastval() in the next call: not defined in this session');
$qg->expect_error(call('currval'), 500, 'query_failed', 'currval() in the next call: not defined in this session');

# --- random()'s seed
my $seeded = $qg->sql('SELECT setseed(0.5); SELECT random()');
($seeded) = (split /\n/, $seeded)[-1];
my $seed = call('seed');
is($seed->{status}, 200, 'setseed(0.5) in one call');
my $r = call('random');
is($r->{status}, 200, 'random() in the next call');
my $v = ($r->{json} // [ {} ])->[0]{v} // -1;
# Compared as numbers: JSON and psql print a double with different numbers of digits.
ok(abs($v - $seeded) > 1e-9, 'the next call\'s random() is not the one setseed(0.5) makes')
  or diag("random() = $v, after setseed(0.5) = $seeded");

is(scalar @{ $qg->worker_pids }, 1, 'one worker served every call');

done_testing();
