# Versions of saved queries (querygate.query_versions, save_query(..., publish => false),
# publish_query, rollback_query): every save keeps a version; callers get the published one and
# never a draft; publishing analyzes the version again and checks every policy granted the query,
# so a version that no longer fits is refused and changes nothing; the run history says which
# version answered each call.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'query_versions', conf => "querygate.history_flush_interval = '100ms'\n");
$qg->sql(q{
	CREATE TABLE qv_a (n int);
	INSERT INTO qv_a VALUES (1);
	CREATE TABLE qv_b (n int);
	INSERT INTO qv_b VALUES (2);
	SELECT querygate.save_query('qv', 'SELECT 1 AS v');
});
$qg->role('qv_role', select => [qw(qv_a qv_b)]);
my $key = $qg->access(policy => 'qv_pol', run_as => 'qv_role', queries => ['qv'],
	setup => q{SELECT querygate.allow_tables('qv_pol', ARRAY['qv_a']::regclass[]);});

sub answer { my $r = $qg->get("/q/$_[0]", key => $key); return "$r->{status} $r->{content}"; }
sub versions
{
	return $qg->sql(q{SELECT string_agg(version || ':' || CASE WHEN published THEN 'published'
	                         WHEN draft THEN 'draft' ELSE 'old' END, ' ' ORDER BY version)
	                    FROM querygate.query_versions WHERE name = } . QuerygateTest::sql_quote($_[0]));
}

is(answer('qv'), '200 [{"v":1}]', 'version 1 answers');
is(versions('qv'), '1:published', 'it is version 1, published');
$qg->sql(q{SELECT querygate.save_query('qv', 'SELECT 2 AS v')});
is(answer('qv'), '200 [{"v":2}]', 'a save publishes version 2');
is(versions('qv'), '1:old 2:published', 'version 1 is kept');

# --- a draft
$qg->sql(q{SELECT querygate.save_query('qv', 'SELECT n AS v FROM qv_a', 'from a table', publish => false)});
is(versions('qv'), '1:old 2:published 3:draft', 'save_query(publish => false) keeps version 3 as a draft');
is(answer('qv'), '200 [{"v":2}]', 'callers still get version 2');
is($qg->sql(q{SELECT version || ' ' || coalesce(description, '-') FROM querygate.queries WHERE name = 'qv'}), '2 -',
	'querygate.queries shows the published version');
$qg->sql(q{SELECT querygate.publish_query('qv')});
is(answer('qv'), '200 [{"v":1}]', 'publish_query publishes the newest version: the draft');
is(versions('qv'), '1:old 2:old 3:published', 'version 3 is published');

# --- a version that no longer fits its grants is refused and changes nothing
$qg->sql(q{SELECT querygate.save_query('qv', 'SELECT n AS v FROM qv_b', publish => false)});
my $err = QuerygateTest::sql_error($qg, q{SELECT querygate.publish_query('qv')});
like($err, qr/qv_b/, 'publishing a version that reads a table the allow-list lacks is refused, naming it');
is(answer('qv'), '200 [{"v":1}]', 'and version 3 still answers');
is(versions('qv'), '1:old 2:old 3:published 4:draft', 'version 4 stays a draft');

# --- rollback
$qg->sql(q{SELECT querygate.rollback_query('qv', 2)});
is(answer('qv'), '200 [{"v":2}]', 'rollback_query(qv, 2) publishes version 2 again');
is(versions('qv'), '1:old 2:published 3:old 4:draft', 'and says so');
like(QuerygateTest::sql_error($qg, q{SELECT querygate.rollback_query('qv', 99)}), qr/has no version 99/,
	'a version that does not exist');
like(QuerygateTest::sql_error($qg, q{SELECT querygate.rollback_query('qv', NULL)}), qr/^22004 /,
	'rollback_query needs a version');

# --- a version analyzed again when published: the schema may have changed since it was saved
$qg->sql(q{
	CREATE TABLE qv_gone (n int);
	GRANT SELECT ON qv_gone TO qv_role;
	SELECT querygate.save_query('qv_other', 'SELECT n FROM qv_gone', publish => false);
	DROP TABLE qv_gone;
});
like(QuerygateTest::sql_error($qg, q{SELECT querygate.publish_query('qv_other')}), qr/^42P01 /,
	'a draft whose table was dropped since is refused when published (42P01)');

# --- a query saved only as a draft does not exist for callers
$qg->sql(q{SELECT querygate.save_query('qv_new', 'SELECT 7 AS v', publish => false)});
like(QuerygateTest::sql_error($qg, q{SELECT querygate.grant_query('qv_pol', 'qv_new')}), qr/does not exist/,
	'a query saved only as a draft cannot be granted');
$qg->sql(q{SELECT querygate.publish_query('qv_new'); SELECT querygate.grant_query('qv_pol', 'qv_new')});
is(answer('qv_new'), '200 [{"v":7}]', 'once published and granted, it answers');

# --- the history says which version answered
my $res = $qg->get('/q/qv', key => $key, headers => { 'X-Request-Id' => 'qv-call-1' });
is($res->{status}, 200, 'a call of version 2');
ok(QuerygateTest::poll_until(sub {
	$qg->sql(q{SELECT query_version FROM querygate.history WHERE request_id = 'qv-call-1'}) eq '2' }),
	'the history records version 2 for it');

# --- drop_query removes every version; the audit log has them
$qg->sql(q{SELECT querygate.drop_query('qv')});
is($qg->sql(q{SELECT count(*) FROM querygate.query_versions WHERE name = 'qv'}), '0', 'drop_query removes the versions');
is($qg->get('/q/qv', key => $key)->{status}, 404, 'and the query is gone');
is($qg->sql(q{SELECT count(*) FROM querygate.audit WHERE catalog = 'saved_query_version' AND object = 'qv'
              AND operation = 'insert'}), '4', 'the audit log has each version saved');
like(QuerygateTest::sql_error($qg, q{SELECT querygate.drop_query('qv')}), qr/does not exist/,
	'dropping it again: it does not exist');

done_testing();
