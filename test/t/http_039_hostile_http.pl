# Hostile HTTP against a live server (test/hostile/hostile_http.py): broken request lines, bad
# percent-encoding and UTF-8, huge and repeated headers, conflicting Content-Length and
# Transfer-Encoding, pipelining, deep and wide JSON, huge numbers, NUL bytes, bearer tokens with
# every field wrong, heads RFC 9112 refuses (400 invalid_request or invalid_path), HEAD on every
# path followed by another request (no body after the head), and valid calls among them, from
# several connections at once. Pass: every answer is well-formed HTTP with the documented JSON on
# errors, every valid call gets its row, no worker restarts, and the server log shows no crash.
# HOSTILE_REQUESTS sets how many (5000 here; the long run in docs/testing.md sends a million).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use FindBin;

my $requests = $ENV{HOSTILE_REQUESTS} // 5000;
my $qg = QuerygateTest->start(name => 'hostile_http', workers => 2,
	jwt_secret => 's' x 40);
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
my $started = time();
IPC::Run::run([ 'python3', $script, '--port', $qg->port, '--key', $key, '--query', 'hostile',
		'--requests', $requests, '--connections', 4, '--seed', 7,
		'--stall-seconds', QuerygateTest::timeouts(2),
		'--codes', $codes ],
	'>', \$out, '2>', \$err);
my $elapsed = time() - $started;
note($out // '');
diag($err) if length($err // '');
like($out // '', qr/^sent $requests, /m, "all $requests were sent");
for my $kind (qw(valid broken_request_line bad_encoding big_headers framing pipelined json_body nul_bytes tokens strict head))
{
	my ($sent, $bad) = ($out // '') =~ /^kind $kind: sent (\d+), unexpected (\d+)$/m;
	ok(defined $sent && $sent > 0 && $bad == 0,
		"$kind: every answer well-formed HTTP, JSON on errors"
		  . ($kind =~ /valid|pipelined/ ? ', rows right' : '')
		  . ($kind eq 'strict' ? ', 400 invalid_request or invalid_path' : '')
		  . ($kind eq 'head' ? ', no body after a HEAD\'s head' : ''))
	  or diag("kind $kind: sent " . ($sent // '?') . ', unexpected ' . ($bad // '?'));
}
is_deeply($qg->worker_pids, $pids, 'no worker restarted');
my $log = slurp_file($qg->node->logfile, $log_start);
unlike($log, qr/terminated by signal|was terminated|TRAP:|PANIC|server process .* exited/,
	'the server log shows no crash');
# Nothing else in the log but checkpoints and libmicrohttpd's messages, and those at most the first
# and one a minute per worker (src/common/log_throttle.hpp).
my @entries = grep { /^\d{4}-\d\d-\d\d / } split /\n/, $log;
my @http = grep { /querygate http: / } @entries;
my @other = grep { !/querygate http: |LOG:  checkpoint (starting|complete)|LOG:  statement: / } @entries;
is(scalar @other, 0, 'nothing unexpected in the server log') or diag(join("\n", @other[0 .. ($#other < 9 ? $#other : 9)]));
cmp_ok(scalar @http, '<=', 2 * (1 + int($elapsed / 60) + 1),
	"libmicrohttpd's messages: at most the first and one a minute per worker")
  or diag(join("\n", @http));
is($qg->get('/health')->{status}, 200, 'and the server answers');

done_testing();
