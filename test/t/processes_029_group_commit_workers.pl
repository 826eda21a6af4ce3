# Group commit across workers (src/worker/group_commit.hpp): while a write deferred by one worker is not
# yet flushed, an answer made by ANOTHER worker that can show it is held too, and both go out once
# WAL is flushed. The WAL flusher is paused (SIGSTOP) to keep the write unflushed for as long as the
# test needs; the WAL writer is slowed to one round every 10 s so that it does not flush it instead,
# and the run history is off, so that no commit of the writer process's flushes it either.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'group_commit_workers', workers => 2,
	conf => "querygate.allow_writes = on\nquerygate.group_commit = on\n"
	  . "wal_writer_delay = '10s'\nquerygate.history = off\n");
$qg->sql(q{
	CREATE ROLE gcw_writer NOLOGIN;
	CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL);
	INSERT INTO counters VALUES (1, 0);
	GRANT SELECT, UPDATE ON counters TO gcw_writer;
	SELECT querygate.save_query('bump', 'UPDATE counters SET n = n + 1 WHERE id = 1');
	SELECT querygate.save_query('count',
		'SELECT n, pg_backend_pid() AS pid FROM counters WHERE id = 1');
});
my $key = $qg->access(policy => 'writer', run_as => 'gcw_writer', queries => [qw(bump count)],
	setup => q{SELECT querygate.grant_writes('writer', '{update}');});

sub send_request
{
	my ($sock, $method, $query) = @_;
	my $body = $method eq 'POST' ? '{}' : '';
	syswrite($sock, "$method /q/$query HTTP/1.1\r\nHost: test\r\nX-API-Key: $key\r\n"
		  . ($method eq 'POST' ? "Content-Type: application/json\r\n" : '')
		  . 'Content-Length: ' . length($body) . "\r\n\r\n$body");
}

# The count and the pid of the worker that answered, on a keep-alive connection.
sub count_on
{
	my ($sock, $timeout) = @_;
	send_request($sock, 'GET', 'count');
	my ($code, $body) = read_response($sock, $timeout);
	return $code eq '200' ? @{ json_decode($body)->[0] }{qw(n pid)} : ();
}

# Connections spread over both workers (each accepts while it holds the fewest); the writer needs
# a worker with two connections, or its commit is not deferred (nothing could share its flush).
my %by_worker;
for (1 .. 8)
{
	my $c = $qg->connect_raw;
	my (undef, $pid) = count_on($c, 10);
	push @{ $by_worker{$pid} }, $c;
	last if keys %by_worker == 2 && grep { @$_ >= 2 } values %by_worker;
}
my ($writer_pid) = grep { @{ $by_worker{$_} } >= 2 } sort keys %by_worker;
my ($reader_pid) = grep { $_ ne ($writer_pid // '') } sort keys %by_worker;
ok(defined $writer_pid && defined $reader_pid, 'connections on both workers, two on one of them')
  or BAIL_OUT('the connections did not spread over the workers');
my $writer = $by_worker{$writer_pid}[0];
my $reader = $by_worker{$reader_pid}[0];

# A first write, so that the next one carries no full-page image (which fills a WAL page and wakes
# the WAL writer, whose flush would release the answers).
send_request($writer, 'POST', 'bump');
is(join(' ', read_response($writer, 10)), '200 {"rows_affected":1}', 'a first write answers');

my $flusher =
  $qg->sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'querygate wal flusher'});
like($flusher, qr/^\d+$/, 'the WAL flusher runs');
kill 'STOP', $flusher;
send_request($writer, 'POST', 'bump');
my @held_write = read_response($writer, 1);
send_request($reader, 'GET', 'count');
my @held_read = read_response($reader, 1);
kill 'CONT', $flusher;
is($held_write[0], 'none', 'with the flusher paused, the write is not answered');
is($held_read[0], 'none', 'nor is a read on the other worker that sees it');
is(join(' ', read_response($writer, 10)), '200 {"rows_affected":1}',
	'the write answers once flushed');
my ($code, $body) = read_response($reader, 10);
is($code, '200', 'the read answers once flushed');
my $row = json_decode($body)->[0];
is($row->{n}, 2, 'the read shows the write');
is($row->{pid}, $reader_pid, 'the read was made by the other worker');
my @after = count_on($reader, 10);
is($after[0], 2, 'later reads are not held');

close $_ for map { @$_ } values %by_worker;
done_testing();
