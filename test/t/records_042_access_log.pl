# The access log (querygate.log_requests, src/http/access_log.hpp): one line per request answered
# in the server log, with the key's name and never its secret; what a call called, by kind: a saved
# query by name, SQL a caller wrote (POST /sql) as kind=sql and never its text; errors only at "errors"; nothing
# while off; /health that succeeds never; a write handed to a helper logged when its answer is back;
# a path that holds a line feed or a forged field stays one line; the JSON format read back with a
# JSON parser, its request ids the answers' X-Request-Id. The setting takes effect on reload.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'access_log', workers => 2,
	conf => "querygate.allow_writes = on\nquerygate.log_requests = all\n");
$qg->sql(q{CREATE TABLE al_items (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO al_items VALUES (1, 0), (2, 0);});
$qg->role('al_reader', select => ['al_items'], grant => [ 'UPDATE ON al_items' ]);
$qg->sql(q{
	SELECT querygate.save_query('al_get', 'SELECT id, n FROM al_items WHERE id = :id');
	SELECT querygate.save_query('al_bump', 'UPDATE al_items SET n = n + 1 WHERE id = :id');
});
my $key = $qg->access(policy => 'al_policy', run_as => 'al_reader', queries => [qw(al_get al_bump)],
	key => 'al_key', setup => q{SELECT querygate.grant_writes('al_policy', '{update}');});
my $sql_key = $qg->access(policy => 'al_sql', run_as => 'al_reader', key => 'al_sql_key', setup => q{
	SELECT querygate.allow_tables('al_sql', '{al_items}');
	SELECT querygate.grant_adhoc('al_sql');
});

my $log = $qg->node->logfile;
my $offset = -s $log;

# The querygate request lines written since the last call, each as its text after "LOG:  ".
sub new_lines
{
	my ($want, $what) = @_;
	my @lines;
	# A worker writes the line before it sends the answer, so it is there when the answer is;
	# the poll only spares a slow file system.
	poll_until(sub {
		my $all = slurp_file($log);
		my $new = substr($all, $offset);
		@lines = map { /LOG:\s+(.*)$/ ? $1 : () } grep { /querygate request:|LOG:\s+\{"status"/ } split /\n/, $new;
		return @lines >= $want;
	});
	$offset = -s $log;
	is(scalar @lines, $want, "$what: $want line(s)");
	return @lines;
}

my $ok = $qg->get('/q/al_get?id=1', key => $key);
is($ok->{status}, 200, 'a call');
my ($line) = new_lines(1, 'a call');
my $id = $ok->{headers}{'x-request-id'};
like($line, qr/^querygate request: status=200 duration_ms=\d+\.\d{3} method=GET path=\/q\/al_get kind=query query=al_get key=al_key policy=al_policy request_id=\Q$id\E client=127\.0\.0\.1$/,
	'its line: status, time, method, path, kind and query, key and policy by name, request id, address');
unlike(slurp_file($log), qr/\Q$key\E/, 'the secret is nowhere in the log');

# SQL a caller wrote: its kind, never its text (which may hold values the caller typed).
my $sql = $qg->post('/sql', { sql => q{SELECT id FROM al_items WHERE 'al-typed-value' <> '' AND id = :id},
		params => { id => 1 } }, key => $sql_key);
is_deeply($sql->{json}, [ { id => 1 } ], 'POST /sql');
($line) = new_lines(1, 'POST /sql');
$id = $sql->{headers}{'x-request-id'};
like($line, qr/^querygate request: status=200 duration_ms=\d+\.\d{3} method=POST path=\/sql kind=sql key=al_sql_key policy=al_sql request_id=\Q$id\E client=127\.0\.0\.1$/,
	'its line: kind=sql and no query, with its key and policy');
unlike(slurp_file($log), qr/al-typed-value/, 'the statement is nowhere in the log');
$qg->expect_error($qg->post('/sql', { sql => 'SELECT 1 AS one' }), 401, 'unauthorized', 'POST /sql without a key');
($line) = new_lines(1, 'POST /sql without a key');
like($line, qr/ method=POST path=\/sql kind=sql code=unauthorized request_id=/,
	'its line: kind=sql, whatever answered it');

my $bad = $qg->get('/q/al_get?id=1', key => 'qg_' . ('A' x 43));
is($bad->{status}, 401, 'a bad key');
($line) = new_lines(1, 'a bad key');
like($line, qr/status=401 .*code=unauthorized/, 'its line has the code');
unlike($line, qr/key=|policy=/, 'and no key or policy: none was accepted');
like($line, qr/ reason="no key has this secret \(or it was revoked\)"$/,
	'and why it was refused, which the caller is not told');
is($qg->get('/q/al_get?id=1')->{status}, 401, 'no key');
($line) = new_lines(1, 'no key');
like($line, qr/ reason="no key or token was sent"$/, 'its reason');
my $far_key = $qg->sql(q{SELECT querygate.create_key('al_far', 'al_policy', allowed_ips => ARRAY['10.9.9.9/32']::cidr[])});
my $far = $qg->get('/q/al_get?id=1', key => $far_key);
is("$far->{status} $far->{json}{code}", '401 unauthorized', 'a key from an address it is not allowed: the same 401');
($line) = new_lines(1, 'a key from another address');
like($line, qr/ reason="key \\"al_far\\" is not allowed from this address"$/, 'its reason names the key');

is($qg->get('/health')->{status}, 200, '/health');
is($qg->get('/nowhere')->{status}, 404, 'an unknown path');
($line) = new_lines(1, '/health then an unknown path');
like($line, qr/status=404 .*path=\/nowhere code=not_found/, 'only the 404: a /health that succeeds is not logged');

# A write goes to a helper; its line comes when the answer does, with the caller's key.
my $w = $qg->post('/q/al_bump', { params => { id => 2 } }, key => $key);
is("$w->{status} $w->{content}", '200 {"rows_affected":1}', 'a write');
($line) = new_lines(1, 'a write');
like($line, qr/^querygate request: status=200 .*method=POST path=\/q\/al_bump kind=query query=al_bump key=al_key policy=al_policy/,
	'logged with its key when its helper answered');

# A path made to forge a field and end the line: refused (a control character in a path,
# invalid_path), and logged all the same, its path a JSON string on the line.
my $sock = $qg->connect_raw;
syswrite($sock, "GET /q/al%0Aget%20key=admin HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-API-Key: $key\r\n\r\n");
read_until_close($sock, timeouts(10));
($line) = new_lines(1, 'a path with a line feed and a forged field');
like($line, qr/status=400 .*path="\/q\/al\\nget key=admin" code=invalid_path/, 'written as a JSON string, on one line');
(my $bare = $line) =~ s/"(?:[^"\\]|\\.)*"/""/g; # the JSON strings emptied: the fields left
is(join(',', $bare =~ /(?:^| )key=(\S+)/g), '', 'forging no key field: none is there (no key was read)');

# errors: the 200 is not logged, the 400 is.
# The same keep-alive connection, so the same worker, for each poll and the checks after it.
$qg->set_and_reload('querygate.log_requests', 'errors');
ok(poll_until(sub {
	my $before = -s $log;
	$qg->get('/q/al_get?id=1', key => $key);
	return -s $log == $before;
}), 'errors: a call that succeeds is not logged once the reload is in');
$offset = -s $log;
$qg->get('/q/al_get?id=1', key => $key);
$qg->get('/q/al_get?id=x', key => $key);
($line) = new_lines(1, 'errors: a 200 and a 400');
like($line, qr/status=400 .*code=param_invalid/, 'the 400 only');

# json: each line one object; read back with a JSON parser.
$qg->set_and_reload('querygate.log_requests', 'all');
$qg->set_and_reload('querygate.log_requests_format', 'json');
ok(poll_until(sub {
	$qg->get('/q/al_get?id=1', key => $key);
	return slurp_file($log) =~ /LOG:\s+\{"status":200/;
}), 'json: lines are JSON once the reload is in');
$offset = -s $log;
my @ids;
for my $i (1 .. 3)
{
	my $res = $qg->get("/q/al_get?id=$i", key => $key);
	push @ids, $res->{headers}{'x-request-id'};
}
my @lines = new_lines(3, 'json: three calls');
my @json = map { json_decode($_) } @lines;
is(scalar(grep { ref $_ eq 'HASH' } @json), 3, 'each line is a JSON object');
is_deeply([ map { $_->{request_id} } @json ], \@ids, 'with the answers\' request ids, in order');
is_deeply([ map { "$_->{status} $_->{key} $_->{policy} $_->{kind} $_->{query}" } @json ],
	[ ('200 al_key al_policy query al_get') x 3 ], 'status, key, policy, kind and query');
# As written, not as decoded: a decoder reads 0.100 as 0.1.
like($lines[0], qr/"duration_ms":\d+\.\d{3}[,}]/, 'and the time in milliseconds');

# off: nothing.
$qg->set_and_reload('querygate.log_requests', 'off');
ok(poll_until(sub {
	my $before = -s $log;
	$qg->get('/q/al_get?id=1', key => $key);
	return -s $log == $before;
}), 'off: a call writes nothing once the reload is in');

done_testing();
