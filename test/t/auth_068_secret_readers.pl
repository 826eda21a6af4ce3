# No role but a superuser reads a secret: the HS256 keys (querygate.jwt_secret_file), the /metrics
# token (querygate.metrics_token_file) and the hash mask's secret (querygate.mask_secret). Members
# of pg_monitor, pg_read_all_settings, pg_read_all_stats and querygate_admin, none a superuser, try
# every way PostgreSQL offers to read a setting, a file or a table, and the answer (rows and errors
# alike) never holds a secret. A secret put in the old settings' place (querygate.jwt_secret in
# postgresql.conf) is not taken, not shown, and not echoed to the log.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $jwt_key = 'readers-test-hs256-secret-0123456789abcdef';
my $metrics_token = 'readers-test-metrics-token-fedcba9876543210';
my $qg = QuerygateTest->start(name => 'readers', jwt_secret => $jwt_key, metrics_token => $metrics_token);
my $mask_hex = $qg->sql(q{SELECT encode(secret, 'hex') FROM querygate.mask_secret ORDER BY created_at LIMIT 1});
like($mask_hex, qr/^[0-9a-f]{64,}$/, 'the mask secret exists');
my %secrets = (jwt_key => $jwt_key, metrics_token => $metrics_token, mask_secret => $mask_hex);

$qg->sql(q{
	CREATE ROLE rd_monitor LOGIN IN ROLE pg_monitor;
	CREATE ROLE rd_settings LOGIN IN ROLE pg_read_all_settings;
	CREATE ROLE rd_stats LOGIN IN ROLE pg_read_all_stats;
	CREATE ROLE rd_admin LOGIN IN ROLE querygate_admin;
	CREATE TABLE rd_lines (line text);
	GRANT INSERT, SELECT ON rd_lines TO rd_monitor, rd_settings, rd_stats, rd_admin;
	-- A superuser's change of the mask secret: the audit log keeps that it happened, not the value.
	INSERT INTO querygate.mask_secret (secret, created_at) VALUES (decode(repeat('ab', 32), 'hex'), now() + interval '1 day');
	DELETE FROM querygate.mask_secret WHERE secret = decode(repeat('ab', 32), 'hex');
});

# Every way to read a setting, a server file or a catalog table that such a role might have.
my @attempts = (
	'SHOW ALL',
	q{SELECT name, setting, reset_val, boot_val FROM pg_settings WHERE name LIKE 'querygate.%'},
	q{SELECT current_setting('querygate.jwt_secret_file'), current_setting('querygate.metrics_token_file')},
	q{SELECT current_setting('querygate.jwt_secret', true), current_setting('querygate.metrics_token', true)},
	q{SELECT * FROM pg_file_settings},
	q{SELECT pg_read_file('jwt.key')},
	q{SELECT pg_read_file('metrics.token')},
	q{SELECT pg_read_binary_file('jwt.key')},
	q{SELECT pg_read_file('postgresql.conf')},
	q{SELECT pg_read_file('postgresql.auto.conf')},
	q{SELECT pg_read_file(pg_current_logfile())},
	q{COPY rd_lines FROM 'jwt.key'},
	q{SELECT lo_get(lo_import('jwt.key'))},
	q{SELECT * FROM pg_ls_dir('.')},
	q{SELECT * FROM querygate.mask_secret},
	q{SELECT * FROM querygate.audit},
	q{SELECT query FROM pg_stat_activity},
	q{SELECT * FROM rd_lines},
);
for my $role (qw(rd_monitor rd_settings rd_stats rd_admin))
{
	my $seen = '';
	for my $sql (@attempts)
	{
		my ($out, $err) = ('', '');
		$qg->node->psql('postgres', $sql, stdout => \$out, stderr => \$err,
			extra_params => [ '-U', $role ]);
		$seen .= "$out\n$err\n";
	}
	for my $name (sort keys %secrets)
	{
		unlike($seen, qr/\Q$secrets{$name}\E/i, "$role: no way of reading shows the $name");
	}
	# And the ways that would show them are closed by privileges, not by luck.
	for my $closed (q{SELECT pg_read_file('jwt.key')}, q{COPY rd_lines FROM 'metrics.token'},
		q{SELECT * FROM querygate.mask_secret})
	{
		my ($out, $err) = ('', '');
		$qg->node->psql('postgres', $closed, stdout => \$out, stderr => \$err, extra_params => [ '-U', $role ]);
		like($err, qr/permission denied|must be superuser|privileges of the pg_read_server_files role/,
			"$role: $closed is refused");
	}
}
my ($out, $err) = ('', '');
$qg->node->psql('postgres', 'SELECT 1 FROM pg_file_settings', stdout => \$out, stderr => \$err,
	extra_params => [ '-U', 'rd_settings' ]);
like($err, qr/permission denied/, 'pg_file_settings is refused to pg_read_all_settings');

# The old settings' names: a secret put there is not taken, shown or logged.
my $log_offset = -s $qg->node->logfile;
my $planted = 'planted-secret-in-postgresql-conf-0123456789';
$qg->node->append_conf('postgresql.conf', "querygate.jwt_secret = '$planted'\n");
$qg->sql('SELECT pg_reload_conf()');
ok(poll_until(sub { $qg->node->log_contains('querygate\.jwt_secret', $log_offset) }),
	'a reload with querygate.jwt_secret in postgresql.conf says the name is not a setting');
unlike(slurp_file($qg->node->logfile, $log_offset), qr/\Q$planted\E/, 'and the log never holds the value');
is($qg->sql(q{SELECT count(*) FROM pg_settings WHERE name = 'querygate.jwt_secret'}), '0',
	'querygate.jwt_secret is no setting');
my $res = $qg->get('/q/none', bearer => QuerygateTest::jwt_hs256({ policy => 'x', iss => 'y', exp => time() + 60 }, $planted));
is($res->{status}, 401, 'a token signed with the planted value is refused');

done_testing();
