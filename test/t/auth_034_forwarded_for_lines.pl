# X-Forwarded-For sent as several header lines: by RFC 9110 section 5.3 they are one list, joined
# in order, so the right-to-left walk from a trusted proxy judges the line a proxy appended, never
# a first line the client wrote (HAProxy's "option forwardfor" appends a line). HTTP::Tiny cannot
# repeat a header name, so these requests are written by hand on raw connections.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'forwarded_for_lines',
	conf => "querygate.trusted_proxies = '127.0.0.1'\n");
$qg->sql(q{
	CREATE ROLE xff_reader NOLOGIN;
	CREATE TABLE xff_accounts (aid int PRIMARY KEY, abalance int);
	INSERT INTO xff_accounts VALUES (1, 10), (2, 20);
	GRANT SELECT ON xff_accounts TO xff_reader;
	SELECT querygate.save_query('xff_account',
		'SELECT aid, abalance FROM xff_accounts WHERE aid = :aid');
});
$qg->access(policy => 'xff', run_as => 'xff_reader', queries => ['xff_account'], key => undef);
my %key = (
	host => $qg->access(policy => 'xff', key => 'xff_host', key_args => q{allowed_ips => '{10.1.2.3/32}'}),
	local => $qg->access(policy => 'xff', key => 'xff_local', key_args => q{allowed_ips => '{127.0.0.1/32}'}),
);

my $ok_body = '[{"aid":1,"abalance":10}]';
my $rid = 'xff-lines-1';
my $bad = $qg->get('/q/xff_account?aid=1', key => 'qg_' . ('A' x 43),
	headers => { 'X-Request-Id' => $rid });
$qg->expect_error($bad, 401, 'unauthorized', 'a bad key');

# "X-Forwarded-For: <value>" lines, one per value, in order.
sub xff { return map { "X-Forwarded-For: $_" } @_; }

# A GET written by hand with these extra header lines, on its own connection: { status, body }.
sub call
{
	my ($k, @lines) = @_;
	my $sock = $qg->connect_raw;
	my $req = "GET /q/xff_account?aid=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
	  . "X-API-Key: $key{$k}\r\nX-Request-Id: $rid\r\n";
	$req .= "$_\r\n" for @lines;
	syswrite($sock, "$req\r\n");
	return finish_request($sock);
}

sub allowed
{
	my ($k, $name, @lines) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = call($k, @lines);
	is("$res->{status} $res->{body}", "200 $ok_body", "$name: 200");
}

# The status and the byte-identical body of a bad key (the same X-Request-Id was sent).
sub refused
{
	my ($k, $name, @lines) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = call($k, @lines);
	is("$res->{status} $res->{body}", "401 $bad->{content}", "$name: the 401 of a bad key");
}

# --- the peer (127.0.0.1) is a trusted proxy from the start
allowed('local', 'no X-Forwarded-For: the proxy\'s own address is judged');
allowed('host', 'one line 10.1.2.3, key {10.1.2.3/32}', xff('10.1.2.3'));

# The attack: the client forges a first line, the trusted proxy appends the real client's line.
refused('host', 'lines 10.1.2.3 (forged) then 192.0.2.9 (appended by the proxy)',
	xff('10.1.2.3', '192.0.2.9'));
refused('host', 'the same lines, the appended one in lower case',
	'X-Forwarded-For: 10.1.2.3', 'x-forwarded-for: 192.0.2.9');
refused('host', 'one line 10.1.2.3, 192.0.2.9: the same answer as two lines',
	xff('10.1.2.3, 192.0.2.9'));
allowed('host', 'lines 192.0.2.9 then 10.1.2.3', xff('192.0.2.9', '10.1.2.3'));
allowed('host', 'one line 192.0.2.9, 10.1.2.3: the same answer as two lines',
	xff('192.0.2.9, 10.1.2.3'));
refused('host', 'three lines, the last one appended by the proxy',
	xff('10.1.2.3', '10.1.2.3, 10.1.2.3', '192.0.2.9'));

# The walk crosses lines: trusted hops are skipped, a malformed hop fails closed.
allowed('host', 'lines 10.1.2.3 then 127.0.0.1: the right-most untrusted hop',
	xff('10.1.2.3', '127.0.0.1'));
allowed('host', 'lines 192.0.2.9, 10.1.2.3 then 127.0.0.1, 127.0.0.1',
	xff('192.0.2.9, 10.1.2.3', '127.0.0.1, 127.0.0.1'));
refused('host', 'lines 10.1.2.3 then garbage: a malformed later line fails closed',
	xff('10.1.2.3', 'garbage'));
refused('host', 'lines 10.1.2.3 then 127.0.0.1, garbage', xff('10.1.2.3', '127.0.0.1, garbage'));

# --- the peer is no longer trusted: every line is ignored
$qg->set_and_reload('querygate.trusted_proxies', '');
ok( poll_fresh(
		sub {
			fresh_request($qg, 'GET', '/q/xff_account?aid=1', key => $key{host},
				headers => { 'X-Forwarded-For' => '10.1.2.3' });
		},
		sub { $_[0]{status} == 401 }),
	'trusted_proxies emptied reached every worker');
refused('host', 'untrusted peer, both lines naming 10.1.2.3', xff('10.1.2.3', '10.1.2.3'));
refused('host', 'untrusted peer, lines 192.0.2.9 then 10.1.2.3', xff('192.0.2.9', '10.1.2.3'));
allowed('local', 'untrusted peer: its own address is judged, whatever the lines say',
	xff('10.1.2.3', '10.1.2.3'));

done_testing();
