# Per-worker caches are invalidated transactionally: a re-saved query, a revoked key, a granted or
# revoked query, a dropped query or policy take effect on the very next request (on every worker);
# a change rolled back never does, and a change not yet committed is not seen.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'cache', workers => 2);
my $node = $qg->node;
$qg->sql(q{
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int);
	INSERT INTO accounts SELECT g, 1, 0 FROM generate_series(1, 10) AS g;
	SELECT querygate.save_query('q', 'SELECT 1 AS v');
	SELECT querygate.save_query('account', 'SELECT aid, bid, abalance FROM accounts WHERE aid = :aid');
	SELECT querygate.save_query('extra', 'SELECT 42 AS answer');
});
my $role = $qg->role('api_reader', select => ['accounts']);
my $key = $qg->access(policy => 'p', run_as => $role, queries => [qw(q account)], key => 'k1');
my $key2 = $qg->access(policy => 'p', key => 'k2');

# Each check is made several times on new connections and on the kept one, so that both workers
# (which cache independently) must have seen the change.
sub all_requests
{
	my ($method, $path, %o) = @_;
	my @got;
	for my $i (1 .. 6)
	{
		my $client = $i % 2 ? $qg->new_client(keep_alive => 0) : undef;
		my $res = $qg->request($method, $path, %o, ($client ? (client => $client) : ()));
		push @got, $res->{status} . ' ' . ($res->{content} // '');
	}
	return \@got;
}

sub all_are
{
	my ($got, $want, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @bad = grep { $_ ne $want } @$got;
	is(scalar(@bad), 0, $name) or diag("wanted: $want\ngot: " . join("\n     ", @$got));
}

sub status_all
{
	my ($got, $status, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @bad = grep { !/^$status / } @$got;
	is(scalar(@bad), 0, $name) or diag("wanted status $status\ngot: " . join("\n     ", @$got));
}

# Warm every cache first.
all_are(all_requests('GET', '/q/q', key => $key), '200 [{"v":1}]', 'warm: q answers v=1');
all_are(all_requests('GET', '/q/account?aid=1', key => $key), '200 [{"aid":1,"bid":1,"abalance":0}]', 'warm: account');

# --- a re-saved query takes effect on the very next request
$qg->sql(q{SELECT querygate.save_query('q', 'SELECT 2 AS w')});
all_are(all_requests('GET', '/q/q', key => $key), '200 [{"w":2}]', 're-saved q (new SQL, new column) on the next requests');
$qg->sql(q{SELECT querygate.save_query('q', 'SELECT :n::int * 10 AS x')});
all_are(all_requests('GET', '/q/q?n=4', key => $key), '200 [{"x":40}]', 're-saved q with a parameter');
status_all(all_requests('GET', '/q/q', key => $key), 400, 'the new parameter is required at once');
$qg->sql(q{SELECT querygate.save_query('q', 'SELECT :m::text AS y')});
all_are(all_requests('GET', '/q/q?m=a', key => $key), '200 [{"y":"a"}]', 're-saved q with another parameter of another type');
status_all(all_requests('GET', '/q/q?n=4', key => $key), 400, 'the old parameter is now unknown');

# A schema change under a kept plan: the plan is rebuilt.
$qg->sql(q{ALTER TABLE accounts ADD COLUMN note text DEFAULT 'n'});
$qg->sql(q{SELECT querygate.save_query('account', 'SELECT aid, note FROM accounts WHERE aid = :aid')});
all_are(all_requests('GET', '/q/account?aid=1', key => $key), '200 [{"aid":1,"note":"n"}]', 're-saved account after ALTER TABLE');

# --- grants
status_all(all_requests('GET', '/q/extra', key => $key), 404, 'extra is not granted yet');
$qg->sql(q{SELECT querygate.grant_query('p', 'extra')});
all_are(all_requests('GET', '/q/extra', key => $key), '200 [{"answer":42}]', 'granted: served on the next request');
$qg->sql(q{SELECT querygate.revoke_query('p', 'extra')});
status_all(all_requests('GET', '/q/extra', key => $key), 404, 'revoked grant: 404 on the next request');

# --- drop_query
$qg->sql(q{SELECT querygate.save_query('temp', 'SELECT 7 AS t'); SELECT querygate.grant_query('p', 'temp')});
all_are(all_requests('GET', '/q/temp', key => $key), '200 [{"t":7}]', 'a new query, granted');
$qg->sql(q{SELECT querygate.drop_query('temp')});
status_all(all_requests('GET', '/q/temp', key => $key), 404, 'dropped query: 404 on the next request');
$qg->sql(q{SELECT querygate.save_query('temp', 'SELECT 8 AS t')});
status_all(all_requests('GET', '/q/temp', key => $key), 404, 'saved again under the same name: its old grant did not come back');

# --- revoked key
all_are(all_requests('GET', '/q/q?m=z', key => $key2), '200 [{"y":"z"}]', 'k2 works');
$qg->sql(q{SELECT querygate.revoke_key('k2')});
status_all(all_requests('GET', '/q/q?m=a', key => $key2), 401, 'revoked key: 401 on the next request');
my $k2again = $qg->sql(q{SELECT querygate.create_key('k2', 'p')});
all_are(all_requests('GET', '/q/q?m=b', key => $k2again), '200 [{"y":"b"}]', 'a new key under the revoked name works');
status_all(all_requests('GET', '/q/q?m=a', key => $key2), 401, 'the old secret of that name stays refused');

# --- rolled back changes never take effect
$qg->sql(q{BEGIN; SELECT querygate.revoke_key('k1'); ROLLBACK;});
all_are(all_requests('GET', '/q/q?m=c', key => $key), '200 [{"y":"c"}]', 'revoke_key rolled back: the key still works');
$qg->sql(q{BEGIN; SELECT querygate.save_query('q', 'SELECT 666 AS evil'); ROLLBACK;});
all_are(all_requests('GET', '/q/q?m=d', key => $key), '200 [{"y":"d"}]', 'save_query rolled back: the old SQL still runs');
$qg->sql(q{BEGIN; SELECT querygate.revoke_query('p', 'q'); ROLLBACK;});
all_are(all_requests('GET', '/q/q?m=e', key => $key), '200 [{"y":"e"}]', 'revoke_query rolled back: still granted');
$qg->sql(q{BEGIN; SELECT querygate.grant_query('p', 'extra'); ROLLBACK;});
status_all(all_requests('GET', '/q/extra', key => $key), 404, 'grant_query rolled back: still not granted');
$qg->sql(q{BEGIN; SELECT querygate.drop_policy('p', true); ROLLBACK;});
all_are(all_requests('GET', '/q/q?m=f', key => $key), '200 [{"y":"f"}]', 'drop_policy cascade rolled back: the key still works');
$qg->sql(q{BEGIN; SELECT querygate.drop_query('q'); ROLLBACK;});
all_are(all_requests('GET', '/q/q?m=g', key => $key), '200 [{"y":"g"}]', 'drop_query rolled back: the query is still there');
$qg->sql(q{BEGIN; SAVEPOINT s; SELECT querygate.revoke_key('k1'); ROLLBACK TO SAVEPOINT s; COMMIT;});
all_are(all_requests('GET', '/q/q?m=h', key => $key), '200 [{"y":"h"}]', 'revoke_key rolled back to a savepoint, then commit: the key still works');

# --- a change not yet committed is not seen; once committed, it is
my $psql = $node->background_psql('postgres');
$psql->query_safe('BEGIN');
$psql->query_safe(q{SELECT querygate.save_query('q', 'SELECT 3 AS uncommitted')});
$psql->query_safe(q{SELECT querygate.revoke_key('k1')});
all_are(all_requests('GET', '/q/q?m=i', key => $key), '200 [{"y":"i"}]', 'uncommitted save_query and revoke_key are not seen');
$psql->query_safe('COMMIT');
status_all(all_requests('GET', '/q/q', key => $key), 401, 'after COMMIT, the revoked key gets 401 on the next request');
$psql->quit;

# --- drop_policy with cascade revokes its keys at once
my $k3 = $qg->access(policy => 'p2', run_as => $role, queries => ['extra'], key => 'k3');
all_are(all_requests('GET', '/q/extra', key => $k3), '200 [{"answer":42}]', 'k3 of policy p2 works');
$qg->sql(q{SELECT querygate.drop_policy('p2', true)});
status_all(all_requests('GET', '/q/extra', key => $k3), 401, 'drop_policy cascade: its key gets 401 on the next request');

# --- expiry needs no catalog change: a key expiring in 2 s stops working by itself
my $k4 = $qg->access(policy => 'p4', run_as => $role, queries => ['extra'], key => 'k4',
	key_args => q{expires_at => now() + interval '2 seconds'});
is($qg->get('/q/extra', key => $k4)->{status}, 200, 'a key expiring in 2 s works now');
ok(poll_until(sub { $qg->get('/q/extra', key => $k4)->{status} == 401 }, 15), 'and gets 401 once expired');

done_testing();
