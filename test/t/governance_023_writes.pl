# Writes: querygate.allow_writes (the server-wide switch, reload) and grant_writes (per policy).
# The seed's deposit and writer key; {"rows_affected": n}; 403 read_only with writes off;
# 403 write_op_not_allowed for an operation the policy lacks, at any level (data-modifying CTEs,
# MERGE); a volatile function that writes, called by a read query, stays read-only whatever the
# policy's grants; RETURNING rows are masked. Every refusal leaves the database as it was.
# Every call is also sent as POST /sql with the query's text, by a twin of its policy granted
# ad-hoc SQL with the same writes (QuerygateTest::both), and answers alike, a write made once per
# path (put back in between), except by design: a function that is not built-in is refused there
# as a name (name_not_allowed, as one that does not exist is), before it could write (the saved
# query's call is read_only), and so is a sequence named by a text (nextval's regclass); SQL is not
# limited to the queries the policy grants.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'writes');
$qg->sql(q{
	CREATE ROLE gov_writer NOLOGIN;
	CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84));
	INSERT INTO pgbench_accounts SELECT g, 1, 0, '' FROM generate_series(1, 10) g;
	CREATE TABLE audit_log (id serial PRIMARY KEY, msg text);
	CREATE FUNCTION log_it(m text) RETURNS int LANGUAGE plpgsql VOLATILE AS $$
	  DECLARE n int; BEGIN INSERT INTO audit_log (msg) VALUES (m) RETURNING id INTO n; RETURN n; END $$;
	CREATE FUNCTION bump(a int) RETURNS int LANGUAGE sql VOLATILE AS
	  'UPDATE pgbench_accounts SET abalance = abalance + 1000 WHERE aid = a RETURNING abalance';
	GRANT SELECT, INSERT, UPDATE, DELETE ON pgbench_accounts, audit_log TO gov_writer;
	GRANT USAGE ON SEQUENCE audit_log_id_seq TO gov_writer;
	GRANT EXECUTE ON FUNCTION log_it(text), bump(int) TO gov_writer;
});

my %q = (
	deposit => 'UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid',
	deposit_returning => 'UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid RETURNING aid, abalance',
	open_account => 'INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES (:aid, 1, 0, \'\')',
	close_account => 'DELETE FROM pgbench_accounts WHERE aid = :aid',
	close_in_cte => 'WITH d AS (DELETE FROM pgbench_accounts WHERE aid = :aid RETURNING *) SELECT count(*)::int AS n FROM d',
	insert_in_cte => 'WITH i AS (INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES (:aid, 1, 0, \'\') RETURNING aid) SELECT aid FROM i',
	update_with_delete_cte => 'WITH d AS (DELETE FROM pgbench_accounts WHERE aid = :gone RETURNING aid) UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid',
	merge_account => 'MERGE INTO pgbench_accounts t USING (SELECT :aid::int AS aid) s ON t.aid = s.aid WHEN MATCHED THEN UPDATE SET abalance = 0',
	log_from_read => 'SELECT log_it(:msg) AS id',
	bump_from_read => 'SELECT bump(:aid) AS b',
	nextval_from_read => 'SELECT nextval(\'audit_log_id_seq\')::int AS n',
	balance => 'SELECT abalance FROM pgbench_accounts WHERE aid = :aid',
	read_write_escape => 'SELECT set_config(\'transaction_read_only\', \'off\', true) AS a, log_it(:msg) AS b',
	reset_rich => 'UPDATE pgbench_accounts SET abalance = 0 WHERE abalance > :min',
	deposit_in_cte => 'WITH u AS (UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid RETURNING aid, abalance) SELECT aid, abalance FROM u',
);
$qg->sql(join('', map { 'SELECT querygate.save_query(' . sql_quote($_) . ', ' . sql_quote($q{$_}) . ");\n" } sort keys %q));
my @all = sort keys %q;

# The seed's writer key: deposit only, update only.
my $writer = $qg->access(policy => 'writer', run_as => 'gov_writer', queries => ['deposit'],
	setup => q{SELECT querygate.grant_writes('writer', '{update}');});
my $full = $qg->access(policy => 'full', run_as => 'gov_writer', queries => \@all,
	setup => q{SELECT querygate.grant_writes('full', '{update}');});
my $inserter = $qg->access(policy => 'inserter', run_as => 'gov_writer', queries => \@all,
	setup => q{SELECT querygate.grant_writes('inserter', '{insert}');});
my $reader = $qg->access(policy => 'reader', run_as => 'gov_writer', queries => \@all);
is($qg->sql(q{SELECT write_ops::text FROM querygate.policies WHERE name = 'writer'}), '{update}', 'grant_writes stored {update}');
$qg->adhoc_twin($_, tables => [qw(pgbench_accounts audit_log staff)]) for qw(writer full inserter reader);
# Through POST /sql, by design: a function that is not built-in is refused as a name.
my @refused_name = (sql => [ 403, 'name_not_allowed', names => qr/or function that does not exist/ ]);

sub balance { return $qg->sql("SELECT abalance FROM pgbench_accounts WHERE aid = $_[0]"); }
sub accounts { return $qg->sql('SELECT count(*) FROM pgbench_accounts'); }
sub state { return $qg->sql('SELECT string_agg(aid || \':\' || abalance, \',\' ORDER BY aid) FROM pgbench_accounts'); }
sub logged { return $qg->sql('SELECT count(*) FROM audit_log'); }

# Refused through both paths: the status and code (%o as expect_error takes them), and the
# database as it was.
sub refused
{
	my ($path, $key, $status, $code, $name, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $before = state() . ' / ' . logged();
	# a write is POSTed (a GET is 405)
	$qg->expect_error($_, $status, $code, $name, %o) for $qg->post_both($path, undef, key => $key);
	is(state() . ' / ' . logged(), $before, "$name: nothing changed in the database by either path");
}

# A write made through both paths, the table put back in between: each answer is $want (its
# status and body), and the write was made (once: the second redid what the first did).
sub wrote
{
	my ($path, $key, $want, $name, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	for my $res ($qg->post_both($path, $o{body}, key => $key, between => $qg->as_now('pgbench_accounts')))
	{
		is("$res->{status} $res->{content}", $want, on_path($res, $name));
	}
}

# --- querygate.allow_writes off (the default): every write is read_only, whatever the policy says
is($qg->sql('SHOW querygate.allow_writes'), 'off', 'allow_writes is off by default');
refused('/q/deposit?aid=1&delta=5', $writer, 403, 'read_only', 'deposit with writes off');
refused('/q/deposit_returning?aid=1&delta=5', $full, 403, 'read_only', 'UPDATE ... RETURNING with writes off');
refused('/q/close_in_cte?aid=1', $full, 403, 'read_only',
	'a DELETE in a CTE, policy without delete (writes off): the server switch outranks the policy');
refused('/q/close_account?aid=1', $reader, 403, 'read_only', 'DELETE with a read-only policy (writes off)');

# --- on, after a reload (polled on fresh connections until every worker has it)
$qg->set_and_reload('querygate.allow_writes', 'on');
ok( poll_fresh(sub { fresh_request($qg, 'POST', '/q/deposit?aid=999999&delta=1', key => $writer) },
		sub { $_[0]{status} == 200 }),
	'allow_writes on reached the workers (a deposit to no account answers 200)');
is("$_->{status} $_->{content}", '200 {"rows_affected":0}', on_path($_, 'deposit to no account: {"rows_affected":0}'))
  for $qg->post_both('/q/deposit?aid=999999&delta=1', undef, key => $writer);

# The seed's deposit with the writer key.
wrote('/q/deposit?aid=3&delta=7', $writer, '200 {"rows_affected":1}', 'deposit: 200 {"rows_affected":1}');
is(balance(3), '7', 'the row changed, committed before the answer');
my $res = $qg->post('/q/deposit?aid=3&delta=0', undef, key => $writer);
is(json_encode($res->{json}), '{"rows_affected":1}', 'the body is a JSON object');
wrote('/q/deposit', $writer, '200 {"rows_affected":1}', 'deposit by POST', body => { params => { aid => 3, delta => 9 } });
is(balance(3), '16', 'the row changed again');
is(accounts(), '10', 'no row added or removed');

# The writer key may call nothing else; its SQL, what its list and writes allow.
my ($saved, $adhoc) = $qg->post_both('/q/balance?aid=3', undef, key => $writer);
$qg->expect_error($saved, 404, 'query_not_found', 'the writer key calling an ungranted query');
$qg->expect_rows($adhoc, [ { abalance => 16 } ], 'its text sent as SQL by the writer\'s twin');

# --- a policy without update
refused('/q/deposit?aid=3&delta=5', $inserter, 403, 'write_op_not_allowed', 'deposit with a policy granted insert only');
refused('/q/deposit?aid=3&delta=5', $reader, 403, 'write_op_not_allowed', 'deposit with a read-only policy');
refused('/q/close_account?aid=4', $full, 403, 'write_op_not_allowed', 'DELETE with a policy granted update only');
refused('/q/open_account?aid=50', $full, 403, 'write_op_not_allowed', 'INSERT with a policy granted update only');
refused('/q/merge_account?aid=3', $full, 403, 'write_op_not_allowed', 'MERGE with a policy granted update only');

# --- data-modifying CTEs count as what they do
refused('/q/close_in_cte?aid=4', $full, 403, 'write_op_not_allowed', 'WITH d AS (DELETE ... RETURNING *) SELECT ...: a delete');
refused('/q/insert_in_cte?aid=60', $full, 403, 'write_op_not_allowed', 'WITH i AS (INSERT ...) SELECT ...: an insert');
refused('/q/update_with_delete_cte?aid=3&gone=4', $full, 403, 'write_op_not_allowed',
	'an UPDATE (granted) with a DELETE in its WITH (not granted)');
refused('/q/close_in_cte?aid=4', $inserter, 403, 'write_op_not_allowed', 'the DELETE CTE with a policy granted insert only');

# --- a volatile function that writes, called from a read query: read-only whatever the grants
$qg->sql(q{SELECT querygate.grant_writes('full', '{insert,update,delete,merge}')});
refused('/q/log_from_read?msg=hello', $full, 403, 'read_only', 'SELECT log_it(...) (an INSERT inside plpgsql)',
	@refused_name);
refused('/q/bump_from_read?aid=3', $full, 403, 'read_only', 'SELECT bump(...) (an UPDATE inside an SQL function)',
	@refused_name);
refused('/q/nextval_from_read', $full, 403, 'read_only', 'SELECT nextval(...)', @refused_name);
refused('/q/log_from_read?msg=hello', $reader, 403, 'read_only', 'SELECT log_it(...) for a read-only policy',
	@refused_name);
{
	my $before = state() . ' / ' . logged();
	# PostgreSQL itself refuses to leave read-only mode once the transaction has taken a snapshot
	# (25001), before log_it runs: an error of the query, not a write it tried. SQL calls neither
	# set_config nor log_it, which is refused first, as a name.
	my $log_offset = -s $qg->node->logfile;
	$qg->expect_error($_, 500, 'query_failed', 'set_config(transaction_read_only, off) then a write', @refused_name)
	  for $qg->post_both('/q/read_write_escape?msg=escape', undef, key => $full);
	ok( poll_until(
			sub {
				$qg->node->log_contains(
					qr/call of "read_write_escape" failed \(request [^)]*\): transaction read-write mode must be set before any query/,
					$log_offset);
			},
			10),
		'set_config(transaction_read_only, off): the server log says PostgreSQL refused read-write mode');
	is(state() . ' / ' . logged(), $before, 'set_config(transaction_read_only, off): nothing changed in the database');
}

# --- with the operations granted
wrote('/q/close_in_cte?aid=4', $full, '200 [{"n":1}]', 'the DELETE CTE once delete is granted');
is($qg->sql('SELECT count(*) FROM pgbench_accounts WHERE aid = 4'), '0', 'and the row is gone');
wrote('/q/open_account?aid=4', $full, '200 {"rows_affected":1}', 'INSERT once insert is granted');
wrote('/q/insert_in_cte?aid=11', $full, '200 [{"aid":11}]', 'the INSERT CTE once insert is granted');
wrote('/q/merge_account?aid=3', $full, '200 {"rows_affected":1}', 'MERGE once merge is granted');
is(balance(3), '0', 'MERGE set the balance');
wrote('/q/close_account?aid=11', $full, '200 {"rows_affected":1}', 'DELETE once delete is granted');
is(accounts(), '10', 'ten accounts again');

# An error in a write rolls it back whole.
$qg->expect_error($_, 500, 'query_failed', 'INSERT of an existing key')
  for $qg->post_both('/q/open_account?aid=5', undef, key => $full);
is(accounts(), '10', 'nothing inserted');

# --- RETURNING rows come back masked
wrote('/q/deposit_returning?aid=5&delta=25', $full, '200 [{"aid":5,"abalance":25}]', 'UPDATE ... RETURNING without masks');
$qg->sql(q{SELECT querygate.mask('full', '*.abalance', 'hash', force => true)});
# The key of each path's answers (the twin's is derived from its own name).
sub hashed { my ($res, $v) = @_; return hmac_of(hash_key($qg, policy => $res->{policy}), $v); }
# A masked value comes back only unchanged: abalance + :delta is computed from it (and an
# overflow would answer differently for some balances), so the write is refused and makes nothing.
refused('/q/deposit_returning?aid=5&delta=25', $full, 403, 'mask_expression', 'RETURNING abalance + delta with *.abalance hashed');
refused('/q/deposit?aid=5&delta=25', $full, 403, 'mask_expression', 'SET abalance = abalance + delta with *.abalance hashed, no RETURNING');
refused('/q/deposit_in_cte?aid=5&delta=1', $full, 403, 'mask_expression', 'an UPDATE CTE\'s RETURNING, selected');
refused('/q/reset_rich?min=10', $full, 403, 'mask_predicate', 'an UPDATE filtering on a hashed column');
# The policy's opt-out: computed values come back masked as a whole.
$qg->sql(q{SELECT querygate.set_policy('full', mask_predicates => 'allow')});
$qg->expect_rows($_, [ { aid => 5, abalance => hashed($_, '50') } ], 'opted out: RETURNING with *.abalance hashed')
  for $qg->post_both('/q/deposit_returning?aid=5&delta=25', undef, key => $full, between => $qg->as_now('pgbench_accounts'));
is(balance(5), '50', 'the masked write was made');
$qg->expect_rows($_, [ { aid => 5, abalance => hashed($_, '51') } ], 'an UPDATE CTE\'s RETURNING, selected: hashed')
  for $qg->post_both('/q/deposit_in_cte?aid=5&delta=1', undef, key => $full, between => $qg->as_now('pgbench_accounts'));
is(balance(5), '51', 'the write in the CTE was made');
$qg->sql(q{SELECT querygate.mask('full', 'pgbench_accounts.abalance', 'drop', force => true)});
$qg->expect_rows($_, [ { aid => 5 } ], 'RETURNING with abalance dropped')
  for $qg->post_both('/q/deposit_returning?aid=5&delta=1', undef, key => $full, between => $qg->as_now('pgbench_accounts'));
is(balance(5), '52', 'the write with a dropped RETURNING column was made');
$qg->expect_rows($_, [ { aid => 12 } ], 'an INSERT CTE returning an unmasked column')
  for $qg->post_both('/q/insert_in_cte?aid=12', undef, key => $full, between => $qg->as_now('pgbench_accounts'));
$qg->sql(q{SELECT querygate.unmask('full', 'pgbench_accounts.abalance'); SELECT querygate.unmask('full', '*.abalance');
           SELECT querygate.set_policy('full', mask_predicates => 'refuse');});

# --- grant_writes NULL or empty: read-only again
$qg->sql(q{SELECT querygate.grant_writes('writer', NULL)});
refused('/q/deposit?aid=3&delta=5', $writer, 403, 'write_op_not_allowed', 'deposit after grant_writes(writer, NULL)');
$qg->sql(q{SELECT querygate.grant_writes('writer', '{UPDATE}')});
wrote('/q/deposit?aid=3&delta=5', $writer, '200 {"rows_affected":1}', 'deposit after grant_writes(writer, {UPDATE})');
$qg->sql(q{SELECT querygate.grant_writes('writer', '{}')});
refused('/q/deposit?aid=3&delta=5', $writer, 403, 'write_op_not_allowed', 'deposit after grant_writes(writer, {})');
like(sql_error($qg, q{SELECT querygate.grant_writes('writer', '{update,truncate}')}), qr/^22023 .*truncate/,
	'grant_writes with an unknown operation: 22023 naming it');
$qg->sql(q{SELECT querygate.grant_writes('writer', '{update}')});

# --- what the database checks on a written row is a use of every column it reads: with salary
# masked, a cap the caller writes under CHECK (salary <= cap) would answer 200 or 500 as the guess
# passes the hidden salary. Refused at grant; granted under the opt-out, then refused at the next
# call once the policy refuses again; never a 500 that tells.
$qg->sql(q{
	CREATE TABLE staff (id int PRIMARY KEY, salary int, salary_cap int, CONSTRAINT staff_cap CHECK (salary <= salary_cap));
	INSERT INTO staff VALUES (1, 5000, 9000);
	GRANT SELECT, UPDATE ON staff TO gov_writer;
	SELECT querygate.mask('writer', 'staff.salary', 'hash', force => true);
	SELECT querygate.save_query('set_cap', 'UPDATE staff SET salary_cap = :cap WHERE id = :id');
});
like(sql_error($qg, q{SELECT querygate.grant_query('writer', 'set_cap')}),
	qr/^42501 .*constraint staff_cap on public\.staff, which compares the masked column public\.staff\.salary/,
	'grant_query refuses a write a CHECK makes an oracle of');
$qg->sql(q{SELECT querygate.set_policy('writer', mask_predicates => 'allow');
           SELECT querygate.grant_query('writer', 'set_cap');
           SELECT querygate.set_policy('writer', mask_predicates => 'refuse');});
for my $cap (4000, 6000)
{
	refused("/q/set_cap?id=1&cap=$cap", $writer, 403, 'mask_predicate', "a cap of $cap: the same refusal either way");
}
is($qg->sql('SELECT salary_cap FROM staff WHERE id = 1'), '9000', 'and nothing was written');
$qg->sql(q{SELECT querygate.unmask('writer', 'staff.salary')});

# --- off again: read_only on the next calls
$qg->set_and_reload('querygate.allow_writes', 'off');
ok( poll_fresh(sub { fresh_request($qg, 'POST', '/q/deposit?aid=999999&delta=1', key => $writer) },
		sub { $_[0]{status} == 403 && ($_[0]{json}{code} // '') eq 'read_only' }),
	'allow_writes off reached the workers');
refused('/q/deposit?aid=3&delta=5', $writer, 403, 'read_only', 'deposit once writes are off again');
refused('/q/close_in_cte?aid=6', $full, 403, 'read_only', 'the granted DELETE CTE once writes are off again');
$qg->expect_rows($_, [ { abalance => 5 } ], 'reads still work') for $qg->post_both('/q/balance?aid=3', undef, key => $full);

done_testing();
