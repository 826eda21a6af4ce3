# Without shared_preload_libraries: CREATE EXTENSION succeeds with a WARNING that HTTP is off and a
# HINT naming shared_preload_libraries; the SQL functions work; no worker runs.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

our $TODO;

my $qg = QuerygateTest->start(name => 'nopreload', preload => 0, extension => 0);
my $node = $qg->node;

my ($stdout, $stderr);
my $rc = $node->psql('postgres', 'CREATE EXTENSION querygate', stdout => \$stdout, stderr => \$stderr,
	extra_params => [ '-v', 'VERBOSITY=default' ]);
is($rc, 0, 'CREATE EXTENSION querygate succeeds without shared_preload_libraries');
like($stderr, qr/WARNING:.*HTTP is off/i, 'a WARNING says HTTP is off');
like($stderr, qr/HINT:.*shared_preload_libraries/, 'a HINT names shared_preload_libraries');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'querygate'}),
	$node->safe_psql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'querygate'}),
	'the extension is installed');

# The SQL API works.
my $secret = $node->safe_psql('postgres', q{
	SELECT querygate.save_query('q', 'SELECT :a::int AS a');
	CREATE ROLE api_reader NOLOGIN;
	SELECT querygate.create_policy('p', 'api_reader');
	SELECT querygate.grant_query('p', 'q');
	SELECT querygate.create_key('k', 'p');
});
$secret = (split /\n/, $secret)[-1] // '';    # the void results print empty lines
like($secret, qr/^qg_[A-Za-z0-9_-]{43}$/, 'save_query, create_policy, grant_query and create_key work');
my $done = $node->safe_psql('postgres',
	q{SELECT querygate.revoke_key('k'); SELECT querygate.drop_policy('p'); SELECT querygate.drop_query('q'); SELECT 'done'});
is((split /\n/, $done)[-1], 'done', 'revoke_key, drop_policy and drop_query work');
$rc = $node->psql('postgres', q{SELECT querygate.save_query('bad', 'SELECT 1; SELECT 2')}, stderr => \$stderr);
isnt($rc, 0, 'save_query still validates the SQL');

is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'querygate http worker'}),
	'0', 'no HTTP worker runs');

# Loading the library into a session later is harmless too.
$rc = $node->psql('postgres', q{LOAD 'querygate'; SELECT 1}, stdout => \$stdout, stderr => \$stderr);
is($rc, 0, q{LOAD 'querygate' in a session works}) or diag($stderr);

# Dropping and re-creating: still the warning, no error.
$rc = $node->psql('postgres', 'DROP EXTENSION querygate; CREATE EXTENSION querygate', stderr => \$stderr);
is($rc, 0, 'DROP and CREATE EXTENSION again');
like($stderr, qr/shared_preload_libraries/, 'the warning comes again');

done_testing();
