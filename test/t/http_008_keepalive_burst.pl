# A burst of 1,000 requests from 4 concurrent clients over keep-alive connections: every one
# succeeds with the right body, and the connections are reused (not one per request).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Scalar::Util qw(refaddr);
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'burst', workers => 2);
$qg->sql(q{
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int);
	INSERT INTO accounts SELECT g, (g - 1) / 10 + 1, 0 FROM generate_series(1, 1000) AS g;
	SELECT querygate.save_query('account', 'SELECT aid, bid, abalance FROM accounts WHERE aid = :aid');
});
my $secret = $qg->access(run_as => $qg->role('api_reader', select => ['accounts']), queries => ['account']);

my $clients = 4;
my $per_client = 250;

# One keep-alive client: how many requests were right, and how many connections it used.
sub run_client
{
	my ($n, $offset) = @_;
	my $http = $qg->new_client(keep_alive => 1);
	my ($good, %conns, @bad, $closes) = (0);
	for my $i (1 .. $n)
	{
		my $aid = ($offset + $i) % 1000 + 1;
		my $bid = int(($aid - 1) / 10) + 1;
		my $res = $i % 2
		  ? $qg->get("/q/account?aid=$aid", key => $secret, client => $http)
		  : $qg->post('/q/account', { params => { aid => $aid } }, key => $secret, client => $http);
		if ($res->{status} == 200 && $res->{content} eq qq([{"aid":$aid,"bid":$bid,"abalance":0}]))
		{
			$good++;
		}
		else
		{
			push @bad, "aid=$aid: " . QuerygateTest::describe($res) if @bad < 3;
		}
		$closes++ if lc($res->{headers}{connection} // '') eq 'close';
		# HTTP::Tiny keeps its handle between requests unless the connection was closed.
		my $h = $http->{handle};
		$conns{ $h ? refaddr($h) . ':' . ($h->{fh} ? $h->{fh}->sockport // 0 : 0) : 'none' . $i }++;
	}
	return ($good, scalar(keys %conns), $closes // 0, @bad);
}

# Sequentially first, on one client: the connection is kept.
my ($good, $conns, $closes, @bad) = run_client(50, 0);
is($good, 50, '50 sequential keep-alive requests succeed') or diag(join("\n", @bad));
is($closes, 0, 'no response says Connection: close');
cmp_ok($conns, '<=', 2, "one client used $conns connection(s) for 50 requests");

# The burst: 4 children, 250 requests each, reporting through a pipe.
pipe(my $reader, my $writer) or die "pipe: $!";
my @kids;
for my $c (1 .. $clients)
{
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		close $reader;
		my @r = eval { run_client($per_client, $c * 250) };
		@r = (0, 0, 0, "client died: $@") unless @r;
		my ($g, $n, $cl, @b) = @r;
		my $line = join("\t", $c, $g, $n, $cl, map { s/[\t\n]/ /gr } @b) . "\n";
		syswrite($writer, $line);
		close $writer;
		POSIX::_exit(0);    # not exit: the cluster's END block would stop the node
	}
	push @kids, $pid;
}
close $writer;
my @lines = <$reader>;
close $reader;
waitpid($_, 0) for @kids;

is(scalar @lines, $clients, "all $clients clients reported");
my ($total, $max_conns) = (0, 0);
for my $line (@lines)
{
	chomp $line;
	my ($c, $g, $n, $cl, @b) = split /\t/, $line;
	$total += $g;
	$max_conns = $n if $n > $max_conns;
	is($g, $per_client, "client $c: $per_client of $per_client requests right") or diag(join("\n", @b));
	is($cl, 0, "client $c: no Connection: close");
	cmp_ok($n, '<=', 5, "client $c: $n connection(s) for $per_client requests (kept alive)");
}
is($total, $clients * $per_client, 'the burst: 1000 of 1000 requests succeeded');

# Both workers took part, and are still the same processes; nothing was written.
is(scalar @{ $qg->worker_pids }, 2, 'both workers still running');
is($qg->sql('SELECT count(*), sum(abalance) FROM accounts'), '1000|0', 'accounts unchanged');
is($qg->get('/q/account?aid=7', key => $secret)->{content}, '[{"aid":7,"bid":1,"abalance":0}]', 'still served after the burst');

done_testing();
