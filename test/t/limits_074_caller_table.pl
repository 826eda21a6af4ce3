# The shared table of limit counts (src/shmem/limit_table.hpp): keys and policies have room of their
# own, so a flood of calls without credentials from ever new addresses (querygate.anonymous_rate_limit,
# the addresses from a trusted proxy's X-Forwarded-For) takes no keyed caller's place; the
# addresses' room takes the oldest address's place in constant time; an IPv6 caller is counted as
# its /64 (querygate.anonymous_ipv6_prefix).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;
use List::Util qw(min);

my $qg = QuerygateTest->start(name => 'caller_table',
	conf => "querygate.limit_entries = 100\nquerygate.address_entries = 100\n"
	  . "querygate.trusted_proxies = '127.0.0.1/32'\n"
	  # One call an address, then one every 1,000 s: an address counted is refused until forgotten.
	  . "querygate.anonymous_rate_limit = 0.001\nquerygate.anonymous_burst = 1\n");
$qg->sql(q{
	CREATE TABLE ct_items (id int PRIMARY KEY);
	INSERT INTO ct_items VALUES (1);
	SELECT querygate.save_query('ct_item', 'SELECT id FROM ct_items WHERE id = :id');
});
$qg->role('ct_reader', select => ['ct_items']);
my @keys = map {
	$qg->access(policy => 'ct_pol', ($_ == 1 ? (run_as => 'ct_reader', queries => ['ct_item']) : ()),
		key_args => 'rate_per_second => 100000, burst => 100000')
} 1 .. 3;

# Sends `n` calls without credentials on one kept-alive connection, pipelined 100 at a time, the
# i-th from address $from->(i); the statuses counted.
sub flood
{
	my ($n, $from) = @_;
	my $sock = $qg->connect_raw;
	my (%count, $buf);
	my $sent = 0;
	while ($sent < $n)
	{
		my $batch = min(100, $n - $sent);
		my $req = join('', map { "GET /q/ct_item?id=1 HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: "
			  . $from->($sent + $_) . "\r\n\r\n" } 0 .. $batch - 1);
		syswrite($sock, $req) == length($req) or die "write: $!";
		$sent += $batch;
		my $got = 0;
		$buf = '';
		while ($got < $batch)
		{
			while ($buf =~ /\A(HTTP\/1\.1 (\d{3})[^\r]*\r\n(?:[^\r]+\r\n)*?Content-Length: (\d+)\r\n(?:[^\r]+\r\n)*\r\n)/i
				&& length($buf) >= length($1) + $3)
			{
				$count{$2}++;
				$got++;
				substr($buf, 0, length($1) + $3) = '';
			}
			last if $got >= $batch;
			my $r = sysread($sock, $buf, 65536, length $buf);
			die "the connection ended after $got of a batch of $batch" unless $r;
		}
	}
	close($sock);
	return \%count;
}

# --- keyed callers call between the flood's batches: none is refused for want of room
my $ipv4 = sub { my $i = shift; join('.', 10, ($i >> 16) & 255, ($i >> 8) & 255, $i & 255) };
my (%keyed, $flood_total);
for my $round (0 .. 19)
{
	my $c = flood(5000, sub { $ipv4->($round * 5000 + shift) });
	$flood_total->{$_} += $c->{$_} for keys %$c;
	for my $key (@keys)
	{
		my $res = $qg->get('/q/ct_item?id=1', key => $key);
		$keyed{ $res->{status} }++;
		diag(QuerygateTest::describe($res)) if $res->{status} != 200 && ($keyed{ $res->{status} } // 0) < 3;
	}
}
is(join(',', map { "$_=$keyed{$_}" } sort keys %keyed), '200=60',
	'100,000 new addresses, 1,000 times the room for addresses: every keyed call answered');
is($flood_total->{401}, 100000, 'every call without credentials is a 401: each address is new, under its limit');

# --- the room for addresses keeps the newest: an address seen lately is still counted
my $again = flood(1, sub { '10.1.134.159' }); # the flood's last address: 99,999 = 1*65536+134*256+159
is(join(',', %$again), '429,1', 'the last address of the flood is still counted: over its limit, 429');
my $oldest = flood(1, sub { '10.0.0.0' });
is(join(',', %$oldest), '401,1', 'the first one was forgotten for a newer one: 401');

# --- IPv6: a /64 is one caller
my $same = flood(3, sub { '2001:db8:7:7::' . (shift() + 1) });
is(join(',', map { "$_=$same->{$_}" } sort keys %$same), '401=1,429=2',
	'three addresses of one /64 are one caller: over its limit after the first');
my $next = flood(1, sub { '2001:db8:7:8::1' });
is(join(',', %$next), '401,1', 'the next /64 is another caller');
$qg->set_and_reload('querygate.anonymous_ipv6_prefix', '128');
ok(QuerygateTest::poll_until(sub { (keys %{ flood(1, sub { '2001:db8:7:7::' . int(rand(1e6) + 10) }) })[0] eq '401' }),
	'with a prefix of 128, another address of that /64 is another caller');

done_testing();
