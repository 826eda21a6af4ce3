# Hostile HTTP against a live server (test/hostile/hostile_http.py): broken request lines, bad
# percent-encoding and UTF-8, huge and repeated headers, conflicting Content-Length and
# Transfer-Encoding, pipelining, deep and wide JSON, huge numbers, NUL bytes, bearer tokens with
# every field wrong, and valid calls among them, from several connections at once. Pass: every
# answer is well-formed HTTP with the documented JSON on errors, every valid call gets its row, no
# worker restarts, and the server log shows no crash. HOSTILE_REQUESTS sets how many (20000 here;
# the long run in the README sends a million).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use FindBin;

my $requests = $ENV{HOSTILE_REQUESTS} // 20000;
my $qg = QuerygateTest->start(name => 'hostile_http', workers => 2,
	conf => "querygate.jwt_secret = '" . ('s' x 40) . "'\n");
$qg->sql(q{
	CREATE TABLE hostile_items (id int PRIMARY KEY, v text);
	INSERT INTO hostile_items SELECT g, 'row ' || g FROM generate_series(1, 100) g;
	SELECT querygate.save_query('hostile', 'SELECT id, v FROM hostile_items WHERE id = :id');
});
$qg->role('hostile_reader', select => ['hostile_items']);
my $key = $qg->access(policy => 'p', run_as => 'hostile_reader', queries => ['hostile']);
my $pids = $qg->worker_pids;
my $log_start = -s $qg->node->logfile;

my $script = "$FindBin::Bin/../hostile/hostile_http.py";
my $codes = "$FindBin::Bin/../../src/common/api_error.hpp";
my ($out, $err);
my $ok = IPC::Run::run([ 'python3', $script, '--port', $qg->port, '--key', $key, '--query', 'hostile',
		'--requests', $requests, '--connections', 4, '--seed', 7, '--codes', $codes ],
	'>', \$out, '2>', \$err);
note($out // '');
diag($err) if length($err // '');
ok($ok, "$requests hostile requests: every answer well-formed, every valid call right") or diag($out);
like($out // '', qr/^sent $requests, /m, 'all of them were sent');
is_deeply($qg->worker_pids, $pids, 'no worker restarted');
my $log = slurp_file($qg->node->logfile, $log_start);
unlike($log, qr/terminated by signal|was terminated|TRAP:|PANIC|server process .* exited/,
	'the server log shows no crash');
is($qg->get('/health')->{status}, 200, 'and the server answers');

done_testing();
