# The table of limit counts when it is full (src/shmem/limit_table.hpp), over HTTP on one worker:
# with every entry holding a caller that matters (a quota count not yet saved), a new caller is
# refused 429 rate_limited rather than counted nowhere; once the counts are saved the entries are
# as good as new, and a new caller's call forgets them. A worker charges the callers it charged
# last without looking them up (their slot and its generation remembered): after their entries
# were forgotten, their next calls must be counted in entries of their own, which the writer then
# saves (a call charged to a forgotten slot would be counted where nobody reads it), and each
# goes on from its saved count.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

# The table's smallest size; the counts are saved only when the test says so.
my $entries = 100;
my $qg = QuerygateTest->start(name => 'limit_entries', workers => 1,
	conf => "querygate.limit_entries = $entries\nquerygate.quota_flush_interval = 3600\n");
$qg->sql(q{
	CREATE TABLE le_items (id int PRIMARY KEY);
	INSERT INTO le_items VALUES (1);
	SELECT querygate.save_query('le_item', 'SELECT id FROM le_items WHERE id = :id');
});
$qg->role('le_reader', select => ['le_items']);
$qg->access(policy => 'le', run_as => 'le_reader', queries => ['le_item'], key => undef);
my @keys = split /\n/, $qg->sql(qq{
	SELECT querygate.create_key('le_k' || g, 'le', quota => 1000 + g)
	FROM generate_series(1, $entries + 1) g ORDER BY g});
is(scalar @keys, $entries + 1, 'one key more than the table has entries, each with a quota');

# Every count below is of a quota per day: the test runs inside one.
$qg->day_with_room(QuerygateTest::timeouts(90));
my $client = $qg->new_client;
sub call_with { return $qg->get('/q/le_item?id=1', key => $keys[ $_[0] - 1 ], client => $client); }

# ---- full of callers that matter: refused, nothing counted
my @first = map { call_with($_)->{status} } 1 .. $entries;
is(join(',', grep { $_ != 200 } @first), '', "the first $entries keys are admitted");
my $refused = call_with($entries + 1);
$qg->expect_error($refused, 429, 'rate_limited', 'a new key while every entry holds an unsaved quota count');
like($refused->{content}, qr/too many callers are being counted at once/, 'and says why');
is($refused->{headers}{'retry-after'}, 1, 'Retry-After: 1');
is(QuerygateTest::limit_fields(call_with($entries))->{r}, 1000 + $entries - 2,
	'a key counted before goes on from its count (2 of its quota used)');

# ---- saved: the entries are as good as new and a new caller's call forgets them
$qg->set_and_reload('querygate.quota_flush_interval', '1');
ok(poll_until(sub { $qg->sql(q{SELECT count(*) FROM querygate.quota_usage}) eq $entries }),
	'the writer saved every count');
$qg->set_and_reload('querygate.quota_flush_interval', '3600');
my $new = call_with($entries + 1);
is($new->{status}, 200, 'the new key is admitted once the others can be forgotten');
is(QuerygateTest::limit_fields($new)->{r}, 1000 + $entries + 1 - 1, 'and counted from nothing');

# The worker remembers the slots of the last 8 keys it looked up: those of keys 93 to 100, less
# the oldest, whose place the new key took. Each is now forgotten, its slot free or the new key's.
# Called newest first, so that each call is made while the worker still remembers its key (a
# key looked up again takes the place of the oldest remembered): each must be counted in an
# entry of its own, loaded from its saved count, and not in the slot remembered.
my @last = reverse($entries - 6 .. $entries);
for my $k (@last)
{
	my $used = $k == $entries ? 2 : 1;
	my $res = call_with($k);
	is($res->{status}, 200, "key $k, forgotten, is admitted");
	is(QuerygateTest::limit_fields($res)->{r}, 1000 + $k - $used - 1,
		"and goes on from its saved count ($used used before)");
}
$qg->set_and_reload('querygate.quota_flush_interval', '1');
my $want = join(',', map { $_ . ':' . ($_ == $entries ? 3 : 2) } reverse @last) . ',' . ($entries + 1) . ':1';
my $got;
ok(poll_until(sub {
	$got = $qg->sql(qq{
		SELECT string_agg(substr(k.name, 5) || ':' || u.used, ',' ORDER BY substr(k.name, 5)::int)
		FROM querygate.quota_usage u JOIN querygate.api_key k ON k.id = u.key_id
		WHERE substr(k.name, 5)::int >= $last[-1]});
	$got eq $want }), 'the writer saved those calls in their own keys\' counts') or diag("got $got, want $want");

done_testing();
