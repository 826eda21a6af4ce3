# The run history (src/shmem/history_ring.hpp, src/worker/history_writer.hpp), over HTTP on two
# workers: every call of a query is a row of querygate.history, matched by its request id, with
# its key, policy, query and revision, status and code, rows, bytes, address, worker and masked
# columns; refused callers too (no key named); nothing for requests that are not calls; a write
# run by a write helper once; querygate.stat_history and /metrics count what was written;
# querygate.history_sample_rate = 0 keeps only errors and counts the rest as skipped; records still
# in the ring at a clean stop are written before the server stops; records are in the partition of
# their UTC day, made by the writer, and a partition older than querygate.history_retention is
# dropped (not while a reader holds the table); querygate.history = off records nothing. Parameters only for a policy
# that keeps them (set_policy(history_params => true)), masked as strictly as the columns each one
# meets: a parameter compared with a hashed column shows the very hash the answer shows.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'history', workers => 2,
	conf => "querygate.allow_writes = on\nquerygate.history_flush_interval = 100\n");
$qg->sql(q{
	CREATE TABLE hi_people (id int PRIMARY KEY, name text NOT NULL, email text NOT NULL, n int NOT NULL);
	INSERT INTO hi_people SELECT g, 'p' || g, 'p' || g || '@example.com', 0 FROM generate_series(1, 10) g;
	SELECT querygate.save_query('hi_person', 'SELECT id, name, email FROM hi_people WHERE id = :id');
	SELECT querygate.save_query('hi_bump', 'UPDATE hi_people SET n = n + 1 WHERE id = :id');
});
$qg->role('hi_reader', select => ['hi_people'], grant => ['UPDATE ON hi_people']);
my $key = $qg->access(policy => 'hi_pol', run_as => 'hi_reader', queries => [qw(hi_person hi_bump)],
	key => 'hi_key',
	setup => q{SELECT querygate.grant_writes('hi_pol', '{update}');
	           SELECT querygate.mask('hi_pol', 'public.hi_people.email', 'mask');});

my $n = 0;
# Calls with a request id of our own, so that each row can be found; returns the response.
sub call
{
	my ($method, $path, %o) = @_;
	my $id = 'hist-' . ++$n;
	my %h = (%{ $o{headers} // {} }, 'X-Request-Id' => $id);
	my $res = $qg->request($method, $path, %o, headers => \%h, client => $qg->new_client);
	$res->{id} = $id;
	return $res;
}

sub row_of
{
	my ($id) = @_;
	return $qg->sql(q{SELECT concat_ws('|', status, coalesce(code, '-'), coalesce(key_name, '-'),
	                                   coalesce(policy, '-'), query, coalesce(query_revision::text, '-'),
	                                   rows, bytes, coalesce(client, '-'), worker BETWEEN 1 AND 2,
	                                   coalesce(masked_columns::text, '-'), duration_ms > 0,
	                                   at <= now() AND at > now() - interval '1 minute')
	                    FROM querygate.history WHERE request_id = } . QuerygateTest::sql_quote($id));
}

sub history_count { return $qg->sql('SELECT count(*) FROM querygate.history'); }

my $revision = $qg->sql(q{SELECT revision FROM querygate.saved_query WHERE name = 'hi_person'});
my $bump_revision = $qg->sql(q{SELECT revision FROM querygate.saved_query WHERE name = 'hi_bump'});

my $ok = call('GET', '/q/hi_person?id=3', key => $key);
is($ok->{status}, 200, 'a call');
my $bad = call('GET', '/q/hi_person?id=x', key => $key);
is($bad->{status}, 400, 'a call with a bad parameter');
my $wrong = call('GET', '/q/hi_person?id=3', key => 'qg_wrong');
is($wrong->{status}, 401, 'a call with a wrong key');
my $nokey = call('GET', '/q/hi_person?id=3');
is($nokey->{status}, 401, 'a call without a key');
my $unknown = call('GET', '/q/no_such_query', key => $key);
is($unknown->{status}, 404, 'a call of a name nobody saved');
my $write = call('POST', '/q/hi_bump', key => $key, json => { params => { id => 1 } });
is($write->{status}, 200, 'a write (run by a write helper)') or diag(QuerygateTest::describe($write));
my $health = call('GET', '/health');
my $nowhere = call('GET', '/nowhere', key => $key);
my $made = 6; # the calls; /health and /nowhere are not calls

ok(QuerygateTest::poll_until(sub { history_count() == $made }), "the $made calls are in querygate.history")
  or diag('rows: ' . history_count());
is(row_of($ok->{id}), "200|-|hi_key|hi_pol|hi_person|$revision|1|" . length($ok->{content})
	  . '|127.0.0.1|t|["email"]|t|t', 'a call: its key, policy, query, revision, rows, bytes, address, worker, masked columns');
is(row_of($bad->{id}), "400|param_invalid|hi_key|hi_pol|hi_person|$revision|0|" . length($bad->{content})
	  . '|127.0.0.1|t|-|t|t', 'a refused parameter: status and code');
is(row_of($wrong->{id}), '401|unauthorized|-|-|hi_person|-|0|' . length($wrong->{content})
	  . '|127.0.0.1|t|-|t|t', 'a wrong key: no key or policy named, no revision');
is(row_of($nokey->{id}), '401|unauthorized|-|-|hi_person|-|0|' . length($nokey->{content})
	  . '|127.0.0.1|t|-|t|t', 'no key');
is(row_of($unknown->{id}), '404|query_not_found|hi_key|hi_pol|no_such_query|-|0|' . length($unknown->{content})
	  . '|127.0.0.1|t|-|t|t', 'a name nobody saved: the name as called');
is(row_of($write->{id}), "200|-|hi_key|hi_pol|hi_bump|$bump_revision|1|" . length($write->{content})
	  . '|127.0.0.1|t|-|t|t', 'the write, once, with the rows it changed');
is($qg->sql(q{SELECT count(*) FROM querygate.history WHERE request_id IN ('} . $health->{id} . q{', '}
		  . $nowhere->{id} . q{')}), 0, 'requests that are not calls are not recorded');
is($qg->sql('SELECT written || \' written, \' || dropped || \' dropped, \' || buffered || \' buffered\' FROM querygate.stat_history'),
	"$made written, 0 dropped, 0 buffered", 'stat_history counts them');
is($qg->sql(q{SELECT has_table_privilege('querygate_admin', 'querygate.history', 'SELECT')
                 AND NOT has_table_privilege('querygate_admin', 'querygate.history', 'INSERT')
                 AND NOT has_table_privilege('public', 'querygate.history', 'SELECT')}),
	't', 'querygate_admin may read the history, nobody else, and nobody may write it');

# ---- parameters: only where the policy keeps them, masked by its rules
is($qg->sql('SELECT count(*) FROM querygate.history WHERE params IS NOT NULL'), 0,
	'a policy keeps no parameters unless it says so');
$qg->sql(q{
	SELECT querygate.save_query('hi_lookup',
	    'SELECT id, email FROM hi_people WHERE id = :id AND email = :email AND name = :name');
	SELECT querygate.save_query('hi_ratio', 'SELECT 10 / :d AS r');
	SELECT querygate.save_query('hi_echo', 'SELECT length(CAST(:t AS text)) AS n');
	SELECT querygate.save_query('hi_rename', 'UPDATE hi_people SET name = :name WHERE id = :id');
	SELECT querygate.create_policy('hi_params', 'hi_reader');
	SELECT querygate.mask('hi_params', 'public.hi_people.email', 'hash');
	SELECT querygate.mask('hi_params', 'public.hi_people.name', 'mask');
	SELECT querygate.set_policy('hi_params', mask_predicates => 'allow', history_params => true);
	SELECT querygate.grant_writes('hi_params', '{update}');
	SELECT querygate.grant_query('hi_params', q)
	  FROM unnest(ARRAY['hi_lookup', 'hi_ratio', 'hi_echo', 'hi_rename']) q;
});
my $pkey = $qg->sql(q{SELECT querygate.create_key('hi_params_key', 'hi_params')});
sub params_of
{
	my ($id) = @_;
	return $qg->sql('SELECT coalesce(params::text, \'-\') FROM querygate.history WHERE request_id = '
		  . QuerygateTest::sql_quote($id));
}
my $found = call('GET', '/q/hi_lookup?id=3&email=p3@example.com&name=p3', key => $pkey);
is($found->{status}, 200, 'a call that keeps its parameters') or diag(QuerygateTest::describe($found));
my $shown_hash = ref $found->{json} eq 'ARRAY' ? $found->{json}[0]{email} : '';
like($shown_hash, qr/^[0-9a-f]{64}$/, 'the answer shows the email hashed');
my $invalid = call('GET', '/q/hi_lookup?id=x&email=a&name=b', key => $pkey);
is($invalid->{status}, 400, 'a parameter that is not of its type');
my $failed = call('GET', '/q/hi_ratio?d=0', key => $pkey);
is($failed->{status}, 500, 'a call that fails while it runs (division by zero)') or diag(QuerygateTest::describe($failed));
my $renamed = call('POST', '/q/hi_rename', key => $pkey, json => { params => { id => 9, name => 'Nine' } });
is($renamed->{status}, 200, 'a write that keeps its parameters (run by a write helper)')
  or diag(QuerygateTest::describe($renamed));
my $long = call('GET', '/q/hi_echo?t=' . ('x' x 1000), key => $pkey);
is($long->{status}, 200, 'a call with a long parameter');
ok(QuerygateTest::poll_until(sub { params_of($long->{id}) ne '' }), 'they are recorded');
is(params_of($found->{id}), qq({"id": 3, "name": "p***", "email": "$shown_hash"}),
	'each parameter masked as the column it meets: the hash the answer shows, mask, none');
is(params_of($invalid->{id}), '-', 'parameters that were not read as their types are not kept');
is(params_of($failed->{id}), '{"d": 0}', 'a call that failed while it ran keeps them');
is(params_of($renamed->{id}), '{"id": 9, "name": "N***"}', 'a write: the value assigned to a masked column is masked');
is(params_of($long->{id}), '{"...": true}', 'what does not fit its room is left out, and said so');
$qg->sql(q{SELECT querygate.set_policy('hi_params', history_params => false)});
my $after = call('GET', '/q/hi_echo?t=abc', key => $pkey);
ok(QuerygateTest::poll_until(sub { params_of($after->{id}) ne '' }), 'a call after history_params is turned off');
is(params_of($after->{id}), '-', 'keeps no parameters');

# ---- the sample rate: errors are always kept
my $before = history_count();
$qg->set_and_reload('querygate.history_sample_rate', '0');
# Wait until both workers have the new rate: calls on new connections are no longer recorded.
ok(QuerygateTest::poll_until(sub {
			my $c = history_count();
			call('GET', '/q/hi_person?id=1', key => $key) for 1 .. 4;
			sleep 1;
			return history_count() == $c;
		}), 'querygate.history_sample_rate = 0: successes are not recorded');
my $skipped = $qg->sql('SELECT skipped FROM querygate.stat_history');
my $err = call('GET', '/q/hi_person?id=x', key => $key);
ok(QuerygateTest::poll_until(sub { row_of($err->{id}) ne '' }), 'an error is recorded at sample rate 0');
call('GET', '/q/hi_person?id=2', key => $key) for 1 .. 3;
ok(QuerygateTest::poll_until(sub { $qg->sql('SELECT skipped FROM querygate.stat_history') == $skipped + 3 }),
	'the successes left out are counted as skipped');
$qg->sql('ALTER SYSTEM RESET querygate.history_sample_rate; SELECT pg_reload_conf()');

# ---- a clean stop writes what the ring holds
$qg->sql(q{ALTER SYSTEM SET querygate.history_flush_interval = 60000;
           ALTER SYSTEM SET querygate.quota_flush_interval = 3600; SELECT pg_reload_conf()});
sleep 2; # the writer's wait already running ends at its old interval; then it waits a minute
my @late = map { call('GET', "/q/hi_person?id=$_", key => $key) } 1 .. 5;
is(scalar(grep { $_->{status} == 200 } @late), 5, 'five calls just before a stop');
$qg->node->restart;
$qg->wait_health;
is($qg->sql('SELECT count(*) FROM querygate.history WHERE request_id IN ('
		  . join(',', map { QuerygateTest::sql_quote($_->{id}) } @late) . ')'),
	5, 'after a clean restart, the calls made just before the stop are in querygate.history');
$qg->sql(q{ALTER SYSTEM RESET querygate.history_flush_interval;
           ALTER SYSTEM RESET querygate.quota_flush_interval; SELECT pg_reload_conf()});

# ---- partitions
# The records are in the partition of the UTC day they were made, named after it and made by the
# writer; the next day's is made ahead of it. Each part below that names the day's partition
# starts with time for itself before midnight (CI runs at any hour).
$qg->day_with_room(QuerygateTest::timeouts(30));
my $today = $qg->sql(q{SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')});
is( $qg->sql(q{SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'querygate.history'::regclass AND c.relname = 'history_} . $today . q{'}),
	$qg->sql(q{SELECT format('FOR VALUES FROM (''%s 00:00:00+00'') TO (''%s 00:00:00+00'')', d, d + 1)
	             FROM (SELECT (now() AT TIME ZONE 'UTC')::date AS d) t}),
	"the day's records are in the day's partition, made by the writer, with the UTC day's bounds");
is( $qg->sql(qq{SELECT count(*) = (SELECT count(*) FROM querygate.history
                                     WHERE at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
               FROM querygate.history_$today}), 't',
	'every record of the day is in it');
is($qg->sql(q{SELECT count(*) FROM ONLY querygate.history}), '0', 'the partitioned table itself holds no row');
ok( QuerygateTest::poll_until(sub {
			$qg->sql(q{SELECT count(*) FROM pg_class WHERE relnamespace = 'querygate'::regnamespace AND relispartition
			             AND relname = 'history_' || to_char(now() AT TIME ZONE 'UTC' + interval '1 day', 'YYYYMMDD')}) == 1
		}, QuerygateTest::timeouts(120)),
	"the next day's partition is made ahead of it");

# ---- a batch that fails
# The writer keeps its slots from one batch to the next; a batch that fails leaves them holding
# its tuples. Here an administrator's unique index on the day's partition makes a batch fail (a
# request id used again): the batch is counted as dropped and logged, and the next one is saved.
sub dropped { return $qg->sql('SELECT dropped FROM querygate.stat_history'); }
sub rows_with { return $qg->sql('SELECT count(*) FROM querygate.history WHERE request_id = ' . QuerygateTest::sql_quote($_[0])); }
sub call_as
{
	my ($id) = @_;
	return $qg->request('GET', '/q/hi_person?id=1', key => $key, headers => { 'X-Request-Id' => $id },
		client => $qg->new_client);
}
$qg->day_with_room(QuerygateTest::timeouts(30));
$today = $qg->sql(q{SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')});
$qg->sql(qq{CREATE UNIQUE INDEX hi_dup ON querygate.history_$today (request_id) WHERE request_id LIKE 'dup-%'});
is(call_as('dup-1')->{status}, 200, 'a call with a request id of its own');
ok(QuerygateTest::poll_until(sub { rows_with('dup-1') == 1 }), 'is saved, through the unique index');
my $dropped_before = dropped();
my $failures_from = -s $qg->node->logfile;
is(call_as('dup-1')->{status}, 200, 'a second call with the same id is answered');
ok( QuerygateTest::poll_until(sub { slurp_file($qg->node->logfile, $failures_from) =~ /run history not saved/ }),
	'its batch fails, and the writer says so');
is(dropped() - $dropped_before, 1, 'its record is counted as dropped');
is(rows_with('dup-1'), 1, 'the first row stays, once');
is(call_as('dup-2')->{status}, 200, 'a call after the failed batch');
ok(QuerygateTest::poll_until(sub { rows_with('dup-2') == 1 }), 'is saved: the writer goes on');
# Two more that fail: each is counted, but a cause that stands would fail every batch, so the
# log has one WARNING of them a minute (the rest at DEBUG1) and, once the minute is over, a line
# saying how many more there were (checked after the retention's part below, which waits for the
# writer's minute anyway).
for my $i (1 .. 2)
{
	my $before = dropped();
	is(call_as('dup-1')->{status}, 200, "the same id again ($i)");
	ok(QuerygateTest::poll_until(sub { dropped() == $before + 1 }), 'its failed batch is counted as dropped');
}
my $warnings = () = slurp_file($qg->node->logfile, $failures_from) =~ /WARNING:  querygate writer: run history not saved/g;
is($warnings, 1, 'three failed batches in a minute, one WARNING');
$qg->sql('DROP INDEX querygate.hi_dup');

# ---- retention
# An old partition (made here as an administrator could, with a row two days old) goes as a whole
# once it is older than querygate.history_retention: its table is dropped.
$qg->sql(q{CREATE TABLE querygate.history_old (LIKE querygate.history);
           ALTER TABLE querygate.history ATTACH PARTITION querygate.history_old
                 FOR VALUES FROM ('2000-01-01') TO (now() - interval '2 days' + interval '1 minute');
           INSERT INTO querygate.history (at, request_id, query, status, duration_ms, rows, bytes, worker)
           VALUES (now() - interval '2 days', 'old-1', 'hi_person', 200, 1, 1, 10, 1)});
is($qg->sql(q{SELECT count(*) FROM querygate.history WHERE request_id = 'old-1'}), '1', 'an old row');
# A reader of the table holds the drop back, and the writer does not wait for it (nor does anyone
# queue behind the writer's lock): the old partition stays while the reader's transaction is open,
# and calls are still recorded.
my $log_offset = -s $qg->node->logfile;
my $reader = $qg->node->background_psql('postgres');
$reader->query_safe('BEGIN');
$reader->query_safe('SELECT count(*) FROM querygate.history');
$qg->set_and_reload('querygate.history_retention', '1d');
ok( QuerygateTest::poll_until(sub {
			slurp_file($qg->node->logfile, $log_offset) =~ /old run history kept for now: querygate.history is in use/
		}, QuerygateTest::timeouts(120)),
	'a partition of a table in use is kept for now, and the writer says so');
is($qg->sql(q{SELECT count(*) FROM querygate.history WHERE request_id = 'old-1'}), '1', 'the old row is still there');
my $during = history_count();
call('GET', '/q/hi_person?id=1', key => $key) for 1 .. 3;
ok(QuerygateTest::poll_until(sub { history_count() >= $during + 3 }),
	'calls are recorded while the reader holds the table');
$reader->query_safe('COMMIT');
$reader->quit;
ok( QuerygateTest::poll_until(sub { $qg->sql(q{SELECT to_regclass('querygate.history_old') IS NULL}) eq 't' }, QuerygateTest::timeouts(120)),
	'once nobody reads the table, a partition older than querygate.history_retention is dropped');
is($qg->sql(q{SELECT count(*) FROM querygate.history WHERE request_id = 'old-1'}), '0', 'and its rows with it');
ok(history_count() > 0, 'the newer rows stay');

# ---- a partition whose columns are numbered differently
# The day's partition swapped for one made by an administrator with a column dropped before the
# others (so every column is numbered one further on, after a dropped one): the writer's slots,
# made for the other partition's columns, are made again for these, and the rows are whole.
$qg->day_with_room(QuerygateTest::timeouts(30));
$today = $qg->sql(q{SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')});
$qg->sql(qq{CREATE TABLE querygate.hi_swap (gone int, LIKE querygate.history);
            ALTER TABLE querygate.hi_swap DROP COLUMN gone;
            ALTER TABLE querygate.history DETACH PARTITION querygate.history_$today;
            ALTER TABLE querygate.history ATTACH PARTITION querygate.hi_swap
                  FOR VALUES FROM (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                              TO (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day')});
my $swapped = call('GET', '/q/hi_person?id=4', key => $key);
is($swapped->{status}, 200, 'a call once the partition is swapped');
ok(QuerygateTest::poll_until(sub { row_of($swapped->{id}) ne '' }), 'its row is saved');
is($qg->sql(q{SELECT count(*) FROM querygate.hi_swap WHERE request_id = } . QuerygateTest::sql_quote($swapped->{id})),
	'1', 'in the swapped partition');
is(row_of($swapped->{id}), "200|-|hi_key|hi_pol|hi_person|$revision|1|" . length($swapped->{content})
	  . '|127.0.0.1|t|["email"]|t|t', 'with every column in its place');
$qg->sql(qq{ALTER TABLE querygate.history DETACH PARTITION querygate.hi_swap;
            ALTER TABLE querygate.history ATTACH PARTITION querygate.history_$today
                  FOR VALUES FROM (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                              TO (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day')});
my $back = call('GET', '/q/hi_person?id=5', key => $key);
ok(QuerygateTest::poll_until(sub { row_of($back->{id}) ne '' }), 'and with the day\'s own partition back, rows are saved there again');

# The failed batches' minute, over: one line for the two left at DEBUG1.
ok( QuerygateTest::poll_until(sub {
			slurp_file($qg->node->logfile, $failures_from) =~
			  /WARNING:  querygate writer: 2 more messages in the last 60 s \(at the debug level\), the last: run history not saved .*duplicate key/
		}, QuerygateTest::timeouts(90)),
	'once the minute is over, one WARNING says how many more failed batches there were, and the last one\'s error');

# ---- off
$qg->set_and_reload('querygate.history', 'off');
ok(QuerygateTest::poll_until(sub {
			my $c = history_count();
			call('GET', '/q/hi_person?id=x', key => $key) for 1 .. 4;
			sleep 1;
			return history_count() == $c;
		}), 'querygate.history = off: nothing is recorded, not even errors');

done_testing();
