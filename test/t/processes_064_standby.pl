# Hot standbys (issue 19, point 1): a primary and a streaming standby on one machine, each with its
# querygate workers.
#
# - GET /ready says which role the server has, and on a standby how far its replay is behind.
# - The standby serves the primary's keys, policies and queries, as they are.
# - A change on the primary (a mask, a new query and grant, a new key, a revoked key) is in force on
#   the standby as soon as it has replayed it: each is checked with one call right after the
#   standby's replay reached the primary's position, with no polling (the catalog's invalidation
#   messages replay with the WAL, and the workers take them at their next transaction).
# - A call that writes on the standby is 503 read_only_replica, however often it comes (an MCP
#   tools/call: the tool's error with that code); the same call on the primary writes.
# - What querygate keeps is per node: rate limits are counted by each server for itself; the
#   standby's statistics are its own calls; its run history waits in its ring (nothing can be
#   written during recovery), and once it is promoted its writer saves what the ring holds.
# - After a promotion, the new primary takes writes with no restart of querygate.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $primary = QuerygateTest->start(name => 'primary', allows_streaming => 1,
	conf => "querygate.history_flush_interval = 100\nquerygate.allow_writes = on\n");
$primary->sql(q{
	CREATE TABLE sb_items (id int PRIMARY KEY, label text, secret text);
	INSERT INTO sb_items VALUES (1, 'one', 's1'), (2, 'two', 's2');
	SELECT querygate.save_query('sb_item', 'SELECT id, label, secret FROM sb_items WHERE id = :id');
	SELECT querygate.save_query('sb_touch', 'UPDATE sb_items SET label = label || ''!'' WHERE id = :id');
	SELECT querygate.save_query('sb_count', 'SELECT count(*)::int AS n FROM sb_items');
	SELECT querygate.save_query('sb_limited', 'SELECT 1 AS one');
});
$primary->role('sb_role', select => ['sb_items']);
$primary->sql('GRANT UPDATE ON sb_items TO sb_role');
my $key = $primary->access(policy => 'sb_pol', run_as => 'sb_role', queries => [qw(sb_item sb_touch)],
	setup => q{SELECT querygate.grant_writes('sb_pol', '{update}');});
my $limited_key = $primary->access(policy => 'sb_lim', run_as => 'sb_role', queries => ['sb_limited'],
	setup => q{SELECT querygate.set_limits(policy => 'sb_lim', rate_per_second => 0.001, burst => 2);});
my $standby = $primary->standby(name => 'standby');
my ($node_p, $node_s) = ($primary->node, $standby->node);

# Waits until the standby has replayed everything the primary has written so far.
sub caught_up
{
	$node_p->wait_for_catchup($node_s, 'replay', $node_p->lsn('insert'));
}

# ---------------------------------------------------------------- /ready says the role
$primary->sql('CREATE TABLE sb_marker ()'); # a transaction for the standby to replay
caught_up();
my $r = $primary->get('/ready');
is("$r->{status} " . ($r->{json}{role} // 'none'), '200 primary', "the primary's /ready: 200, role primary");
ok(!exists $r->{json}{replay_lag_bytes}, 'a primary has no replay lag to report');
$r = $standby->get('/ready');
is("$r->{status} " . ($r->{json}{role} // 'none'), '200 standby', "the standby's /ready: 200, role standby");
like($r->{json}{replay_lag_bytes} // '', qr/^\d+$/, 'with the bytes received and not yet replayed');
ok(defined $r->{json}{replayed_ago_s} && $r->{json}{replayed_ago_s} >= 0 && $r->{json}{replayed_ago_s} < 600,
	'and how long ago its last replayed transaction committed') or diag($r->{content});

# ---------------------------------------------------------------- the standby serves
$standby->expect_rows($standby->get('/q/sb_item?id=1', key => $key),
	[ { id => 1, label => 'one', secret => 's1' } ],
	"the standby serves the primary's key, policy and query");

# ---------------------------------------------------------------- changes replay with the WAL
$primary->sql(q{SELECT querygate.mask('sb_pol', 'public.sb_items.secret', 'null')});
caught_up();
$standby->expect_rows($standby->get('/q/sb_item?id=1', key => $key),
	[ { id => 1, label => 'one', secret => undef } ],
	'a mask added on the primary is in force on the standby once replayed, at its first call');

$primary->sql(q{SELECT querygate.grant_query('sb_pol', 'sb_count')});
caught_up();
$standby->expect_rows($standby->get('/q/sb_count', key => $key),
	[ { n => 2 } ],
	'a query granted on the primary is callable on the standby once replayed');

my $key2 = $primary->access(policy => 'sb_pol', key => 'sb_second');
caught_up();
is($standby->get('/q/sb_count', key => $key2)->{status}, 200, 'a key made on the primary works on the standby once replayed');
$primary->sql(q{SELECT querygate.revoke_key('sb_second')});
caught_up();
$standby->expect_error($standby->get('/q/sb_count', key => $key2), 401, 'unauthorized',
	'a key revoked on the primary is refused by the standby once replayed');

# ---------------------------------------------------------------- writes go to the primary
for my $i (1 .. 4)
{
	$standby->expect_error($standby->post('/q/sb_touch?id=1', undef, key => $key), 503, 'read_only_replica',
		"a call that writes, on the standby (call $i)");
}
$standby->expect_error($standby->post('/q/sb_touch', { params => { id => 2 } }, key => $key), 503,
	'read_only_replica', 'a POST that writes, on the standby');
my $tool = $standby->post('/mcp', { jsonrpc => '2.0', id => 1, method => 'tools/call',
	params => { name => 'sb_touch', arguments => { id => 1 } } }, key => $key);
my $result = $tool->{json}{result} // {};
is($tool->{status} . ' ' . ($result->{isError} ? 'isError' : 'not an error') . ' '
	  . (($result->{content}[0]{text} // '') =~ /"code":"read_only_replica"/ ? 'read_only_replica' : 'another code'),
	'200 isError read_only_replica', 'an MCP tools/call that writes, on the standby: the tool\'s error, not HTTP\'s')
  or diag($tool->{content});
is($primary->post('/q/sb_touch?id=1', undef, key => $key)->{status}, 200, 'the same call on the primary writes');
caught_up();
$standby->expect_rows($standby->get('/q/sb_item?id=1', key => $key),
	[ { id => 1, label => 'one!', secret => undef } ],
	'and the standby reads the write once replayed');

# ---------------------------------------------------------------- what is kept, per node
# Rate limits: the policy's burst of 2 is counted by each server for itself.
my @standby_calls = map { $standby->get('/q/sb_limited', key => $limited_key)->{status} } 1 .. 3;
my @primary_calls = map { $primary->get('/q/sb_limited', key => $limited_key)->{status} } 1 .. 3;
is("@standby_calls", '200 200 429', 'the standby counts the rate limit for itself');
is("@primary_calls", '200 200 429', 'and the primary for itself, whatever the standby counted');

# Statistics: the standby's are its own calls.
is($standby->sql(q{SELECT calls FROM querygate.stat_queries WHERE query = 'sb_touch'}), '6',
	"the standby's statistics count its own calls (the 6 refused writes)");
is($primary->sql(q{SELECT calls FROM querygate.stat_queries WHERE query = 'sb_touch'}), '1',
	"the primary's count its own (the one write)");

# History: nothing can be written during recovery; the standby's records wait in its ring.
my $standby_rids = join(',', map {
	QuerygateTest::sql_quote($standby->get("/q/sb_item?id=$_", key => $key)->{headers}{'x-request-id'})
} 1 .. 3);
my $ring = $standby->sql(q{SELECT buffered > 0 AND written = 0 FROM querygate.stat_history});
is($ring, 't', "the standby's records wait in its ring, none written");
caught_up();
is($standby->sql("SELECT count(*) FROM querygate.history WHERE request_id IN ($standby_rids)"), '0',
	"its calls are not in the history it replays from the primary");

# ---------------------------------------------------------------- promotion
$node_s->promote;
ok(QuerygateTest::poll_until(sub { ($standby->get('/ready')->{json}{role} // '') eq 'primary' }),
	'once promoted, its /ready says primary');
is($standby->post('/q/sb_touch?id=2', undef, key => $key)->{status}, 200,
	'the promoted server takes writes, with no restart of querygate');
is($standby->sql(q{SELECT label FROM sb_items WHERE id = 2}), 'two!', 'and the write is there');
ok(QuerygateTest::poll_until(sub {
		$standby->sql("SELECT count(*) FROM querygate.history WHERE request_id IN ($standby_rids)") eq '3' }),
	'its writer saves the records its ring kept while it was a standby');

done_testing();
