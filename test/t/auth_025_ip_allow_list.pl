# Key address allow-lists (create_key(..., allowed_ips => cidr[])) and querygate.trusted_proxies:
# a caller outside the list gets exactly the 401 of a bad key; X-Forwarded-For is ignored unless
# the connection comes from a trusted proxy, and then the right-most untrusted hop is judged.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'ip_allow_list');
$qg->sql(q{
	CREATE ROLE gov_reader NOLOGIN;
	CREATE TABLE accounts (aid int PRIMARY KEY, abalance int);
	INSERT INTO accounts VALUES (1, 10), (2, 20);
	GRANT SELECT ON accounts TO gov_reader;
	SELECT querygate.save_query('account', 'SELECT aid, abalance FROM accounts WHERE aid = :aid');
});
$qg->access(policy => 'reader', run_as => 'gov_reader', queries => ['account'], key => undef);
my %key = (
	local => $qg->access(policy => 'reader', key => 'local', key_args => q{allowed_ips => '{127.0.0.1/32}'}),
	loopback8 => $qg->access(policy => 'reader', key => 'loopback8', key_args => q{allowed_ips => '{10.0.0.0/8,127.0.0.0/8}'}),
	ten => $qg->access(policy => 'reader', key => 'ten', key_args => q{allowed_ips => '{10.0.0.0/8}'}),
	v6 => $qg->access(policy => 'reader', key => 'v6', key_args => q{allowed_ips => '{::1/128}'}),
	host => $qg->access(policy => 'reader', key => 'host', key_args => q{allowed_ips => '{10.1.2.3/32}'}),
	any => $qg->access(policy => 'reader', key => 'any'),
);
is($qg->sql(q{SELECT allowed_ips::text FROM querygate.keys WHERE name = 'ten'}), '{10.0.0.0/8}', 'the keys view shows allowed_ips');

my $ok_body = '[{"aid":1,"abalance":10}]';
my $rid = 'ip-test-1';
my $bad = $qg->get('/q/account?aid=1', key => 'qg_' . ('A' x 43), headers => { 'X-Request-Id' => $rid });
$qg->expect_error($bad, 401, 'unauthorized', 'a bad key');

sub call
{
	my ($k, %headers) = @_;
	return $qg->get('/q/account?aid=1', key => $key{$k}, headers => { 'X-Request-Id' => $rid, %headers });
}

sub allowed
{
	my ($k, $name, %headers) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = call($k, %headers);
	is("$res->{status} $res->{content}", "200 $ok_body", "$name: 200") or diag(QuerygateTest::describe($res));
}

# The same status and the byte-identical body of a bad key (the same X-Request-Id was sent).
sub refused
{
	my ($k, $name, %headers) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = call($k, %headers);
	is("$res->{status} $res->{content}", "401 $bad->{content}", "$name: the 401 of a bad key")
	  or diag(QuerygateTest::describe($res));
	my %h = map { $_ => $res->{headers}{$_} } qw(content-type www-authenticate);
	my %b = map { $_ => $bad->{headers}{$_} } qw(content-type www-authenticate);
	is_deeply(\%h, \%b, "$name: the same headers as a bad key");
}

# --- the connection's own address (127.0.0.1)
allowed('local', 'allowed_ips {127.0.0.1/32} from 127.0.0.1');
allowed('loopback8', 'allowed_ips {10.0.0.0/8,127.0.0.0/8} from 127.0.0.1');
allowed('any', 'a key without allowed_ips');
refused('ten', 'allowed_ips {10.0.0.0/8} from 127.0.0.1');
refused('v6', 'allowed_ips {::1/128} from 127.0.0.1');
my $res = $qg->post('/q/account', { params => { aid => 1 } }, key => $key{ten}, headers => { 'X-Request-Id' => $rid });
is("$res->{status} $res->{content}", "401 $bad->{content}", 'POST from outside: the 401 of a bad key');
$res = $qg->get('/q/account?aid=1', bearer => $key{ten}, headers => { 'X-Request-Id' => $rid });
is("$res->{status} $res->{content}", "401 $bad->{content}", 'Authorization: Bearer from outside: the 401 of a bad key');
$res = $qg->get('/q/no_such_query', key => $key{ten}, headers => { 'X-Request-Id' => $rid });
is("$res->{status} $res->{content}", "401 $bad->{content}", 'an unknown query from outside: 401, not 404');

# --- X-Forwarded-For is ignored while no proxy is trusted
is($qg->sql('SHOW querygate.trusted_proxies'), '', 'no trusted proxies by default');
refused('ten', 'X-Forwarded-For: 10.1.2.3 from an untrusted peer', 'X-Forwarded-For' => '10.1.2.3');
refused('host', 'X-Forwarded-For naming the key\'s own host, untrusted peer', 'X-Forwarded-For' => '10.1.2.3');
allowed('local', 'X-Forwarded-For: 10.1.2.3 ignored for a 127.0.0.1 key', 'X-Forwarded-For' => '10.1.2.3');
refused('ten', 'X-Real-IP is never believed', 'X-Real-IP' => '10.1.2.3');
refused('ten', 'Forwarded is never believed', 'Forwarded' => 'for=10.1.2.3');

# --- 127.0.0.1 becomes a trusted proxy: the forwarded address is judged
$qg->set_and_reload('querygate.trusted_proxies', '127.0.0.1/32');
ok( poll_fresh(
		sub {
			fresh_request($qg, 'GET', '/q/account?aid=1', key => $key{ten}, headers => { 'X-Forwarded-For' => '10.1.2.3' });
		},
		sub { $_[0]{status} == 200 }),
	'trusted_proxies = 127.0.0.1/32 reached every worker');
allowed('ten', 'X-Forwarded-For: 10.1.2.3 from the trusted proxy, key {10.0.0.0/8}', 'X-Forwarded-For' => '10.1.2.3');
allowed('host', 'X-Forwarded-For: 10.1.2.3, key {10.1.2.3/32}', 'X-Forwarded-For' => '10.1.2.3');
refused('host', 'X-Forwarded-For: 10.1.2.4, key {10.1.2.3/32}', 'X-Forwarded-For' => '10.1.2.4');
refused('local', 'X-Forwarded-For: 10.1.2.3 now judged, key {127.0.0.1/32}', 'X-Forwarded-For' => '10.1.2.3');
allowed('local', 'no X-Forwarded-For: the proxy\'s own address is judged');
refused('ten', 'no X-Forwarded-For, key {10.0.0.0/8}: the proxy\'s own address is judged');
allowed('ten', 'the right-most hop that is not a trusted proxy (10.1.2.3, 127.0.0.1)',
	'X-Forwarded-For' => '10.1.2.3, 127.0.0.1');
refused('ten', 'a spoofed left-most entry does not help (10.1.2.3, 192.168.1.1)',
	'X-Forwarded-For' => '10.1.2.3, 192.168.1.1');
allowed('ten', 'a spoofed left-most entry is not judged (192.168.1.1, 10.1.2.3)',
	'X-Forwarded-For' => '192.168.1.1, 10.1.2.3');
refused('ten', 'a malformed hop fails closed', 'X-Forwarded-For' => 'not-an-address');
refused('ten', 'a malformed right-most hop fails closed', 'X-Forwarded-For' => '10.1.2.3, garbage');
allowed('any', 'a malformed hop does not matter to a key without allowed_ips', 'X-Forwarded-For' => 'not-an-address');
allowed('ten', 'an IPv4-mapped IPv6 hop', 'X-Forwarded-For' => '::ffff:10.9.9.9');
refused('v6', 'an IPv6 hop outside {::1/128}', 'X-Forwarded-For' => '2001:db8::1');
allowed('v6', 'an IPv6 hop inside {::1/128}', 'X-Forwarded-For' => '::1');

# --- no longer trusted: the forwarded address is ignored again
$qg->set_and_reload('querygate.trusted_proxies', '');
ok( poll_fresh(
		sub {
			fresh_request($qg, 'GET', '/q/account?aid=1', key => $key{ten}, headers => { 'X-Forwarded-For' => '10.1.2.3' });
		},
		sub { $_[0]{status} == 401 }),
	'trusted_proxies emptied reached every worker');
refused('ten', 'X-Forwarded-For ignored again', 'X-Forwarded-For' => '10.1.2.3');
allowed('local', 'the connection address judged again', 'X-Forwarded-For' => '10.1.2.3');

# A trusted network that does not hold the peer changes nothing.
$qg->set_and_reload('querygate.trusted_proxies', '192.168.0.0/16, 10.0.0.1');
ok( poll_fresh(sub { fresh_request($qg, 'GET', '/q/account?aid=1', key => $key{local}, headers => { 'X-Forwarded-For' => '10.1.2.3' }) },
		sub { $_[0]{status} == 200 }),
	'a trust list without the peer: X-Forwarded-For still ignored');
refused('ten', 'a trust list without the peer, key {10.0.0.0/8}', 'X-Forwarded-For' => '10.1.2.3');

done_testing();
