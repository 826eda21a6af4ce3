# A large catalog (src/call/catalog_cache.hpp, src/call/catalog_changes.hpp): 100,000 keys and 300
# saved queries, keys fetched by their hash when presented and kept in a cache of
# querygate.key_cache_size (50 here), the least recently used forgotten first, and queries by their
# name. Every kind of change takes effect at the next call on every worker: a key created, revoked,
# expired, given another address list or limit; a policy's grant or mask; a query saved again,
# dropped, saved anew; a key forgotten by the cache and then revoked; more keys revoked in one
# transaction than are told one by one; a change rolled back changes nothing; a transaction that
# changed keys cannot be prepared.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $KEYS = 100_000;
my $qg = QuerygateTest->start(name => 'large_catalog', workers => 2,
	conf => "querygate.key_cache_size = 50\nmax_prepared_transactions = 2\n");
$qg->sql(q{
	CREATE TABLE lc_t (id int PRIMARY KEY, secret text NOT NULL);
	INSERT INTO lc_t SELECT g, 'secret-' || g FROM generate_series(1, 10) g;
	SELECT querygate.save_query('lc_get', 'SELECT id, secret FROM lc_t WHERE id = :id');
	SELECT querygate.save_query('lc_other', 'SELECT count(*) AS n FROM lc_t');
	SELECT count(querygate.save_query('lc_q' || g, 'SELECT id FROM lc_t WHERE id = ' || g))
	FROM generate_series(1, 300) g;
});
$qg->role('lc_role', select => ['lc_t']);
$qg->access(policy => 'lc', run_as => 'lc_role', queries => ['lc_get'], key => undef);
# The keys as a service would have them: made in bulk, each secret's SHA-256 stored.
$qg->sql(qq{
	INSERT INTO querygate.api_key (name, policy, key_hash)
	SELECT 'bulk' || g, 'lc', pg_catalog.sha256(convert_to('bulk-secret-' || g, 'UTF8'))
	FROM generate_series(1, $KEYS) g});
is($qg->sql('SELECT count(*) FROM querygate.api_key'), $KEYS, "$KEYS keys");

# Every call on a connection of its own: the workers take them in turn or as they come, so a few
# calls reach both.
sub statuses
{
	my ($path, $key, $n) = @_;
	return join(',', map { $qg->get($path, key => $key, client => $qg->new_client)->{status} } 1 .. ($n // 6));
}
my $all_ok = join(',', (200) x 6);
my $all_401 = join(',', (401) x 6);

is(statuses('/q/lc_get?id=1', 'bulk-secret-77'), $all_ok, 'a bulk key is fetched when presented');
is(statuses('/q/lc_get?id=1', 'bulk-secret-77x'), $all_401, 'an unknown one is refused');

# --- created: at the next call
my $new = $qg->sql(q{SELECT querygate.create_key('lc_new', 'lc')});
is(statuses('/q/lc_get?id=1', $new), $all_ok, 'a key created is accepted at its first call');

# --- revoked: cached everywhere first, then refused at the next call
is(statuses('/q/lc_get?id=1', 'bulk-secret-5'), $all_ok, 'a key in every worker\'s cache');
$qg->sql(q{UPDATE querygate.api_key SET revoked_at = now() WHERE name = 'bulk5'});
is(statuses('/q/lc_get?id=1', 'bulk-secret-5'), $all_401, 'revoked: refused at the next call');
is(statuses('/q/lc_get?id=1', $new), $all_ok, 'other keys go on');
$qg->sql(q{SELECT querygate.revoke_key('lc_new')});
is(statuses('/q/lc_get?id=1', $new), $all_401, 'revoke_key: refused at the next call');

# --- rolled back: nothing changes
is(statuses('/q/lc_get?id=1', 'bulk-secret-6'), $all_ok, 'another cached key');
$qg->sql(q{BEGIN; UPDATE querygate.api_key SET revoked_at = now() WHERE name = 'bulk6'; ROLLBACK;});
is(statuses('/q/lc_get?id=1', 'bulk-secret-6'), $all_ok, 'a revocation rolled back revokes nothing');

# --- expired, given an address list, given a limit
is(statuses('/q/lc_get?id=1', 'bulk-secret-7'), $all_ok, 'a key about to expire');
$qg->sql(q{UPDATE querygate.api_key SET expires_at = now() - interval '1 second' WHERE name = 'bulk7'});
is(statuses('/q/lc_get?id=1', 'bulk-secret-7'), $all_401, 'expired: refused at the next call');
is(statuses('/q/lc_get?id=1', 'bulk-secret-8'), $all_ok, 'a key about to be tied to an address');
$qg->sql(q{UPDATE querygate.api_key SET allowed_ips = '{192.0.2.0/24}' WHERE name = 'bulk8'});
is(statuses('/q/lc_get?id=1', 'bulk-secret-8'), $all_401, 'called from elsewhere: refused at the next call');
is(statuses('/q/lc_get?id=1', 'bulk-secret-9'), $all_ok, 'a key about to be limited');
$qg->sql(q{SELECT querygate.set_limits(key => 'bulk9', rate_per_second => 1, burst => 1)});
is(statuses('/q/lc_get?id=1', 'bulk-secret-9', 3), '200,429,429', 'limited: counted at the next call');

# --- the policy: a grant, a mask, a setting
$qg->expect_error($qg->get('/q/lc_other', key => 'bulk-secret-10'), 404, 'query_not_found',
	'a query not granted');
$qg->sql(q{SELECT querygate.grant_query('lc', 'lc_other')});
is(statuses('/q/lc_other', 'bulk-secret-10'), $all_ok, 'granted: served at the next call');
$qg->sql(q{SELECT querygate.mask('lc', 'lc_t.secret', 'null')});
my $masked = $qg->get('/q/lc_get?id=2', key => 'bulk-secret-10');
is($masked->{content}, '[{"id":2,"secret":null}]', 'masked: null at the next call')
  or diag($masked->{content});
$qg->sql(q{SELECT querygate.revoke_query('lc', 'lc_other')});
$qg->expect_error($qg->get('/q/lc_other', key => 'bulk-secret-10'), 404, 'query_not_found',
	'its grant revoked: not found at the next call');

# --- a query: saved again, dropped, saved anew (each fetched by its name when first called)
$qg->sql(q{SELECT querygate.grant_query('lc', 'lc_q7')});
is(statuses('/q/lc_q7', 'bulk-secret-10'), join(',', ('200') x 6), 'a query among 300, granted');
is($qg->get('/q/lc_q7', key => 'bulk-secret-10')->{content}, '[{"id":7}]', 'its rows');
$qg->sql(q{SELECT querygate.save_query('lc_q7', 'SELECT id AS again FROM lc_t WHERE id = 8')});
is(join(',', map { $qg->get('/q/lc_q7', key => 'bulk-secret-10', client => $qg->new_client)->{content} } 1 .. 6),
	join(',', ('[{"again":8}]') x 6), 'saved again: its new SQL at the next call');
$qg->sql(q{SELECT querygate.drop_query('lc_q7')});
is(statuses('/q/lc_q7', 'bulk-secret-10'), join(',', (404) x 6), 'dropped: not found at the next call');
$qg->sql(q{SELECT querygate.save_query('lc_q7', 'SELECT 77 AS n'); SELECT querygate.grant_query('lc', 'lc_q7')});
is($qg->get('/q/lc_q7', key => 'bulk-secret-10')->{content}, '[{"n":77}]', 'saved anew: served at once');

# --- forgotten by the cache (50 keys), then revoked
is(statuses('/q/lc_get?id=1', 'bulk-secret-11'), $all_ok, 'a key cached');
my @others = map { $qg->get('/q/lc_get?id=1', key => "bulk-secret-$_", client => $qg->new_client)->{status} }
  1000 .. 1119;
is(scalar(grep { $_ != 200 } @others), 0, '120 other keys called: the first forgotten by every cache');
$qg->sql(q{SELECT querygate.revoke_key('bulk11')});
is(statuses('/q/lc_get?id=1', 'bulk-secret-11'), $all_401, 'revoked after it was forgotten: refused');
is(statuses('/q/lc_get?id=1', 'bulk-secret-1119'), $all_ok, 'a key cached last goes on');

# --- more keys changed at once than are told one by one: every cache forgets every key
is(statuses('/q/lc_get?id=1', 'bulk-secret-2000'), $all_ok, 'a key cached before a bulk revocation');
$qg->sql(q{UPDATE querygate.api_key SET revoked_at = now() WHERE name LIKE 'bulk20__'});
is(statuses('/q/lc_get?id=1', 'bulk-secret-2000'), $all_401, '100 keys revoked at once: refused');
is(statuses('/q/lc_get?id=1', 'bulk-secret-1119'), $all_ok, 'the others are fetched again');

# --- a transaction that changed keys cannot be prepared
is($qg->sql_error(q{BEGIN; UPDATE querygate.api_key SET tenant = 't' WHERE name = 'bulk12';
	PREPARE TRANSACTION 'lc';}),
	'0A000 querygate: a transaction that changed API keys or saved queries cannot be prepared',
	'PREPARE TRANSACTION after a key changed is refused');
is($qg->sql(q{SELECT count(*) FROM pg_prepared_xacts}), '0', 'nothing was prepared');
is($qg->sql(q{SELECT tenant IS NULL FROM querygate.api_key WHERE name = 'bulk12'}), 't',
	'and the change rolled back');

done_testing();
