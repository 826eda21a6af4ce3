# Execution: every call is read-only (a saved write, a volatile function that writes, nextval:
# 403 read_only, nothing written), runs as the policy's run_as role (GRANTs: 403 permission_denied
# without leaking the table name; row-level security filters rows), query errors are 500
# query_failed with the message in the server log only, a timeout is 504 and the same worker serves
# the next call, and workers show in pg_stat_activity with their running query.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(time);
use QuerygateTest;

# One worker, so "the next call" is served by the same process.
# The worker runs its reads (querygate.slow_call_threshold = 0): a slow one holds it, which is
# what this test needs; slow reads in helpers: limits_073_slow_calls.pl.
my $qg = QuerygateTest->start(name => 'safety', workers => 1,
	conf => "querygate.slow_call_threshold = 0\n");
my $node = $qg->node;
$qg->sql(q{
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int);
	INSERT INTO accounts SELECT g, 1, 0 FROM generate_series(1, 10) AS g;
	CREATE TABLE audit (x int);
	CREATE SEQUENCE seq;
	CREATE FUNCTION write_audit() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
	BEGIN INSERT INTO audit VALUES (1); RETURN 1; END $$;
	CREATE TABLE secret_payroll (name text, salary int);
	INSERT INTO secret_payroll VALUES ('ceo', 1000000);
	CREATE TABLE docs (id int, owner text, body text);
	INSERT INTO docs VALUES (1, 'alice', 'a1'), (2, 'bob', 'b1'), (3, 'alice', 'a2'), (4, 'carol', 'c1');
	ALTER TABLE docs ENABLE ROW LEVEL SECURITY;
	CREATE POLICY own_docs ON docs USING (owner = current_user);
	CREATE ROLE alice;
	CREATE ROLE bob;
	CREATE ROLE nobody;
	GRANT SELECT ON docs TO alice, bob;
	GRANT SELECT ON accounts TO nobody;

	SELECT querygate.save_query('write_fn', 'SELECT write_audit() AS w');
	SELECT querygate.save_query('insert', 'INSERT INTO audit VALUES (:x::int) RETURNING x');
	SELECT querygate.save_query('update', 'UPDATE accounts SET abalance = abalance + 1 WHERE aid = :aid RETURNING aid');
	SELECT querygate.save_query('cte_write', 'WITH d AS (DELETE FROM audit RETURNING x) SELECT count(*) AS n FROM d');
	SELECT querygate.save_query('nextval', $$SELECT nextval('seq') AS v$$);
	SELECT querygate.save_query('payroll', 'SELECT name, salary FROM secret_payroll');
	SELECT querygate.save_query('docs', 'SELECT id, body FROM docs ORDER BY id');
	SELECT querygate.save_query('whoami', 'SELECT current_user::text AS cu, session_user::text AS su');
	SELECT querygate.save_query('divide', 'SELECT 100 / :d::int AS q');
	SELECT querygate.save_query('bad_cast', $$SELECT ('secret-value-xyz' || :s::text)::int AS x$$);
	SELECT querygate.save_query('sleep', 'SELECT pg_sleep(:s::float8)::text AS slept, 1 AS done');
	SELECT querygate.save_query('account', 'SELECT aid, bid, abalance FROM accounts WHERE aid = :aid');
	SELECT querygate.save_query('pid', 'SELECT pg_backend_pid() AS pid');
});
# The calls run as an ordinary role that holds every privilege the writes would need, so their
# refusal is the read-only transaction's, not a missing grant's.
my $app = $qg->access(policy => 'app',
	run_as => $qg->role('api_app', grant => [ 'SELECT, INSERT, UPDATE, DELETE ON accounts, audit', 'USAGE, UPDATE ON SEQUENCE seq' ]),
	queries => [qw(write_fn insert update cte_write nextval whoami divide bad_cast sleep account pid)]);
# A policy running as the superuser, asked for by name: it is read-only too, reads what an ordinary
# role may not, and bypasses row-level security.
my $admin = $qg->access(policy => 'admin', allow_superuser => 1, queries => [qw(write_fn insert update cte_write nextval payroll docs)]);
my $as_nobody = $qg->access(policy => 'as_nobody', run_as => 'nobody', queries => [qw(payroll account whoami)]);
my $as_alice = $qg->access(policy => 'as_alice', run_as => 'alice', queries => [qw(docs whoami)]);
my $as_bob = $qg->access(policy => 'as_bob', run_as => 'bob', queries => [qw(docs)]);

my @pids = @{ $qg->worker_pids };
is(scalar @pids, 1, 'one worker in pg_stat_activity with backend_type "querygate http worker"');
my $worker = $pids[0] // 0;
my $pm_start = $qg->sql('SELECT pg_postmaster_start_time()');
my $log_offset = -s $node->logfile;

# --- read-only, for an ordinary role with the privileges and for the superuser alike
my $res;
for my $k ([ 'api_app', $app ], [ 'the superuser', $admin ])
{
	my ($who, $key) = @$k;
	$res = $qg->get('/q/write_fn', key => $key);
	$qg->expect_error($res, 403, 'read_only', "a SELECT calling a volatile function that INSERTs ($who)");
	$res = $qg->post('/q/insert?x=5', undef, key => $key);
	$qg->expect_error($res, 403, 'read_only', "a saved INSERT ($who)");
	$res = $qg->post('/q/update?aid=1', undef, key => $key);
	$qg->expect_error($res, 403, 'read_only', "a saved UPDATE ($who)");
	$res = $qg->post('/q/cte_write', undef, key => $key);
	$qg->expect_error($res, 403, 'read_only', "a data-modifying CTE ($who)");
	$res = $qg->get('/q/nextval', key => $key);
	$qg->expect_error($res, 403, 'read_only', "nextval() ($who)");
}
is($qg->sql('SELECT count(*) FROM audit'), '0', 'nothing was inserted into audit');
is($qg->sql('SELECT sum(abalance) FROM accounts'), '0', 'accounts were not updated');
is($qg->sql('SELECT last_value, is_called FROM seq'), '1|f', 'the sequence did not move');

# --- permission_denied: the run_as role lacks SELECT
$res = $qg->get('/q/payroll', key => $as_nobody);
$qg->expect_error($res, 403, 'permission_denied', 'run_as nobody, which lacks SELECT on the table');
unlike($res->{content} // '', qr/payroll|salary|ceo|1000000/i, 'the body names neither the table nor any data');
$res = $qg->get('/q/account?aid=1', key => $as_nobody);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"aid":1,"bid":1,"abalance":0}]',
	'the same policy reads a table it has SELECT on');
$res = $qg->get('/q/whoami', key => $as_nobody);
is(($res->{json} // [ {} ])->[0]{cu}, 'nobody', 'current_user in the query is the run_as role');
$res = $qg->get('/q/payroll', key => $admin);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"name":"ceo","salary":1000000}]',
	'a policy running as the superuser reads it');

# --- row-level security applies to the run_as role
$res = $qg->get('/q/docs', key => $as_alice);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"id":1,"body":"a1"},{"id":3,"body":"a2"}]',
	'run_as alice sees only her rows');
$res = $qg->get('/q/docs', key => $as_bob);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"id":2,"body":"b1"}]', 'run_as bob sees only his row');
$res = $qg->get('/q/docs', key => $admin);
is(scalar @{ $res->{json} // [] }, 4, 'the superuser policy sees all four rows (RLS is per role)');
$res = $qg->get('/q/whoami', key => $as_alice);
is(($res->{json} // [ {} ])->[0]{cu}, 'alice', 'current_user is alice');
$res = $qg->get('/q/docs', key => $as_alice);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"id":1,"body":"a1"},{"id":3,"body":"a2"}]',
	'alice again after other roles used the same cached plan');

# --- query_failed: the database's message goes to the log only
$res = $qg->get('/q/divide?d=0', key => $app);
$qg->expect_error($res, 500, 'query_failed', 'division by zero');
unlike($res->{content} // '', qr/division|zero|22012/i, 'the body does not carry the database\'s message or SQLSTATE');
ok(poll_until(sub { $node->log_contains('division by zero') }, 10), 'the server log has "division by zero"');
$res = $qg->get('/q/bad_cast?s=1', key => $app);
$qg->expect_error($res, 500, 'query_failed', 'a cast error inside the query');
unlike($res->{content} // '', qr/secret-value-xyz|invalid input/i, 'the body does not echo the failing value');
$res = $qg->get('/q/divide?d=4', key => $app);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"q":25}]', 'the same query with a good value works next');

# --- pg_stat_activity shows the worker and its running query
my $child = fork();
die "fork: $!" unless defined $child;
if ($child == 0)
{
	my $c = $qg->new_client;
	$c->request('GET', $qg->base_url . '/q/sleep?s=3', { headers => { 'X-API-Key' => $app } });
	POSIX::_exit(0);    # not exit: the cluster's END block would stop the node
}
ok( poll_until(
		sub {
			$qg->sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'querygate http worker'
				AND state = 'active' AND query LIKE '%pg_sleep%'}) eq '1';
		},
		10),
	'while it runs, the worker is active in pg_stat_activity with the query text');
waitpid($child, 0);
is($qg->sql(q{SELECT datname FROM pg_stat_activity WHERE backend_type = 'querygate http worker'}), 'postgres',
	'the worker is connected to querygate.database');

# --- timeout: 504, and the same worker serves the next call
$qg->set_and_reload('querygate.statement_timeout', '200ms');
my $t0;
ok( poll_until(
		sub {
			$res = $qg->get('/q/sleep?s=1', key => $app);
			return $res->{status} == 504;
		}),
	'after statement_timeout = 200ms and a reload, a 1 s sleep times out');
$t0 = time;
$res = $qg->get('/q/sleep?s=2', key => $app);
my $elapsed = time - $t0;
$qg->expect_error($res, 504, 'query_timeout', 'pg_sleep(2) with a 200ms statement_timeout');
cmp_ok($elapsed, '<', 2, 'the 504 came before the sleep would have ended');
$res = $qg->get('/q/account?aid=2', key => $app);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"aid":2,"bid":1,"abalance":0}]',
	'the very next call is served');
$res = $qg->get('/q/pid', key => $app);
is(($res->{json} // [ {} ])->[0]{pid}, $worker, 'by the same worker process');
$res = $qg->get('/q/sleep?s=0.01', key => $app);
is($res->{status}, 200, 'a query shorter than the timeout is served') or diag(QuerygateTest::describe($res));
for (1 .. 3)
{
	$qg->get('/q/sleep?s=1', key => $app);
}
$res = $qg->get('/q/account?aid=3', key => $app);
is($res->{status}, 200, 'still served after three more timeouts');
$qg->sql('ALTER SYSTEM RESET querygate.statement_timeout');
$qg->sql('SELECT pg_reload_conf()');
ok(poll_until(sub { $qg->get('/q/sleep?s=0.5', key => $app)->{status} == 200 }),
	'after RESET and a reload, a 0.5 s sleep is served again');

# --- the worker never restarted, the postmaster neither
is_deeply($qg->worker_pids, [$worker], 'the worker process is the one from the start');
is($qg->sql('SELECT pg_postmaster_start_time()'), $pm_start, 'the postmaster did not restart');
ok(!$node->log_contains('terminated by signal|exited with exit code [1-9]', $log_offset),
	'no process was terminated by a signal or exited with an error');
is($qg->sql('SELECT count(*) FROM audit'), '0', 'audit is still empty at the end');

done_testing();
