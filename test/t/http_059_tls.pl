# TLS (querygate.ssl, src/worker/tls_files.hpp): with a certificate the test makes, curl verifying
# it gets /health and a call over TLS 1.3 on one kept-alive connection; curl not trusting it is
# refused, plain HTTP and TLS 1.1 are not served; PostgreSQL's own ssl_cert_file and ssl_key_file
# serve when querygate's are empty; and a key file others may read (or a missing file) keeps the
# workers from serving at all, said once each in the log, without restarting them in a loop.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use Time::HiRes qw(sleep);

my $dir = PostgreSQL::Test::Utils::tempdir();
my ($cert, $key) = ("$dir/querygate.crt", "$dir/querygate.key");
system('openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
	'-keyout', $key, '-out', $cert, '-days', '2', '-subj', '/CN=127.0.0.1',
	'-addext', 'subjectAltName=IP:127.0.0.1') == 0
  or BAIL_OUT('openssl could not make a certificate');
chmod 0600, $key;

my $qg = QuerygateTest->start(name => 'tls', wait_health => 0,
	conf => "querygate.ssl = on\nquerygate.ssl_cert_file = '$cert'\nquerygate.ssl_key_file = '$key'\n");
my $base = 'https://127.0.0.1:' . $qg->port;

# curl's exit code, its output and what it printed of the handshake.
sub curl
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'curl', '-sS', '--max-time', QuerygateTest::timeouts(10), @args ], '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

ok(QuerygateTest::poll_until(sub { (curl('--cacert', $cert, "$base/health"))[1] =~ /"status":"ok"/ }),
	'curl trusting the certificate gets /health over TLS');
my ($rc, $out, $err) = curl('-v', '--cacert', $cert, "$base/health");
is($rc, 0, 'curl succeeds');
like($err, qr/SSL connection using TLSv1\.3/, 'over TLS 1.3');
($rc) = curl("$base/health");
is($rc, 60, 'curl not trusting the certificate refuses it (exit 60: it is verified)');
($rc, $out) = curl('-o', '/dev/null', '-w', '%{http_code}', 'http://127.0.0.1:' . $qg->port . '/health');
is($out, '000', 'plain HTTP on the port gets no answer');
($rc) = curl('--cacert', $cert, '--tls-max', '1.1', "$base/health");
isnt($rc, 0, 'TLS 1.1 is not spoken');

$qg->sql(q{SELECT querygate.save_query('tls_q', 'SELECT :n::int * 2 AS twice')});
$qg->role('tls_role');
my $secret = $qg->access(policy => 'tls_pol', run_as => 'tls_role', queries => ['tls_q']);
($rc, $out, $err) = curl('-v', '--cacert', $cert, '-H', "X-API-Key: $secret",
	"$base/q/tls_q?n=21", "$base/q/tls_q?n=4");
is($out, '[{"twice":42}][{"twice":8}]', 'two calls over TLS');
like($err, qr/Re-using existing connection/, 'on one kept-alive connection');

# --- PostgreSQL's own files when querygate's are empty
$qg->node->append_conf('postgresql.conf',
	"querygate.ssl_cert_file = ''\nquerygate.ssl_key_file = ''\nssl_cert_file = '$cert'\nssl_key_file = '$key'\n");
$qg->node->restart;
ok(QuerygateTest::poll_until(sub { (curl('--cacert', $cert, "$base/health"))[1] =~ /"status":"ok"/ }),
	"with querygate's files empty, PostgreSQL's ssl_cert_file and ssl_key_file serve");

# The server's log from its last start after $offset: a worker of the server before may start
# late (under the sanitizers a second worker started after the file changed, and said so before
# that server stopped), and what it said is not the new server's.
sub log_of_last_start
{
	my ($offset) = @_;
	my $text = substr(slurp_file($qg->node->logfile), $offset);
	my $start = rindex($text, 'starting PostgreSQL');
	return $start < 0 ? '' : substr($text, $start);
}

# --- a key others may read: no worker serves, each says why once, none is restarted
chmod 0644, $key;
my $offset = -s $qg->node->logfile;
$qg->node->restart;
my $reason = qr/querygate http worker does not serve: querygate\.ssl is on, but .*querygate\.key" has group or world access/;
ok(QuerygateTest::poll_until(sub {
	my @lines = log_of_last_start($offset) =~ /$reason/g;
	return @lines == 2 }), 'a key file others may read: both workers say why they do not serve')
  or diag('the server log since the restart:', "\n", substr(slurp_file($qg->node->logfile), $offset));
sleep(3 * QuerygateTest::timeouts(1));
my @lines = log_of_last_start($offset) =~ /$reason/g;
is(scalar(@lines), 2, 'once each: they are not restarted over and over');
is($qg->sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'querygate http worker'}), '0',
	'no worker runs');
($rc, $out) = curl('-o', '/dev/null', '-w', '%{http_code}', '-k', "$base/health");
is($out, '000', 'and nothing answers, neither TLS nor plain HTTP');
is($qg->sql('SELECT 1'), '1', 'the database itself goes on');

# --- a missing file, the same
chmod 0600, $key;
$qg->node->append_conf('postgresql.conf', "querygate.ssl_cert_file = '$dir/nowhere.crt'\n");
$offset = -s $qg->node->logfile;
$qg->node->restart;
ok(QuerygateTest::poll_until(sub {
	substr(slurp_file($qg->node->logfile), $offset) =~ /does not serve: querygate\.ssl is on, but could not open ".*nowhere\.crt"/ }),
	'a certificate file that is not there: said, and not served');

done_testing();
